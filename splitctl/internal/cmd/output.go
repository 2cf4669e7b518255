package cmd

import (
	"encoding/json"
	"fmt"
	"io"

	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/splitlet/splitlet/splitctl/internal/client"
)

// outputFormat is a validated -o value.
type outputFormat string

const (
	outputTable outputFormat = ""
	outputWide  outputFormat = "wide"
	outputJSON  outputFormat = "json"
	outputYAML  outputFormat = "yaml"
	outputName  outputFormat = "name"
)

func parseOutput(s string, allowed ...outputFormat) (outputFormat, error) {
	for _, a := range allowed {
		if outputFormat(s) == a {
			return a, nil
		}
	}
	var names []string
	for _, a := range allowed {
		if a != outputTable {
			names = append(names, string(a))
		}
	}
	return "", fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %v", s, names)
}

// printObjects prints objects as -o json or -o yaml: one object as itself,
// several (or a list request) as a v1 List, as kubectl does.
func printObjects(out io.Writer, format outputFormat, kind string, objs []*structpb.Struct, asList bool) error {
	var v any
	if len(objs) == 1 && !asList {
		v = client.ObjectMap(objs[0], kind)
	} else {
		items := make([]any, 0, len(objs))
		for _, o := range objs {
			items = append(items, client.ObjectMap(o, kind))
		}
		v = map[string]any{
			"apiVersion": "v1",
			"kind":       "List",
			"items":      items,
			"metadata":   map[string]any{"resourceVersion": ""},
		}
	}
	return printValue(out, format, v)
}

func printValue(out io.Writer, format outputFormat, v any) error {
	switch format {
	case outputJSON:
		// kubectl's JSONPrinter indents by four spaces.
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case outputYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	return fmt.Errorf("output format %q is not a serialization format", format)
}
