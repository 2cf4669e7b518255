package kuberuntime

import (
	"strings"
	"testing"
)

// The cases follow the kubelet's pkg/kubelet/util/env TestParseEnv rules.
func TestParseEnv(t *testing.T) {
	cases := []struct {
		desc    string
		content string
		key     string
		want    string
		wantErr string
	}{
		{desc: "simple value", content: "KEY='value'\n", key: "KEY", want: "value"},
		{desc: "other keys around", content: "A='a'\nKEY='v'\nB='b'\n", key: "KEY", want: "v"},
		{desc: "key absent", content: "A='a'\n", key: "KEY", want: ""},
		{desc: "empty file", content: "", key: "KEY", want: ""},
		{desc: "no newline at the end", content: "KEY='v'", key: "KEY", want: "v"},
		{desc: "blank lines, comments and leading blanks skipped", content: "\n  \t\n# KEY='no'\n   # c\n \tKEY='v'\n", key: "KEY", want: "v"},
		{desc: "literal content: no escapes, no expansion", content: `KEY='a\n $HOME "q" $(X)'` + "\n", key: "KEY", want: `a\n $HOME "q" $(X)`},
		{desc: "value may hold '=' and '#'", content: "KEY='a=b # c'\n", key: "KEY", want: "a=b # c"},
		{desc: "comment after the closing quote", content: "KEY='v'   # note\n", key: "KEY", want: "v"},
		{desc: "blanks after the closing quote", content: "KEY='v' \t\n", key: "KEY", want: "v"},
		{desc: "multi-line value", content: "KEY='line1\n  line2\nline3'\nB='b'\n", key: "KEY", want: "line1\n  line2\nline3"},
		{desc: "multi-line value of another key skipped", content: "A='x\nKEY=not-a-line'\nKEY='v'\n", key: "KEY", want: "v"},
		{desc: "CRLF line ends", content: "A='a'\r\nKEY='v'\r\n", key: "KEY", want: "v"},
		{desc: "blank after '=': empty value", content: "KEY= 'v'\n", key: "KEY", want: ""},
		{desc: "blank after '=' of another key: rest of line ignored", content: "A= 'x\nKEY='v'\n", key: "KEY", want: "v"},
		{desc: "first occurrence wins", content: "KEY='first'\nKEY='second'\n", key: "KEY", want: "first"},
		{desc: "lines after the key are not read", content: "KEY='v'\nnot valid\n", key: "KEY", want: "v"},
		{desc: "empty quoted value", content: "KEY=''\n", key: "KEY", want: ""},
		{desc: "name is matched whole", content: "KEY2='no'\nKEY='v'\n", key: "KEY", want: "v"},

		{desc: "missing '='", content: "A='a'\nKEY\n", key: "KEY", wantErr: "invalid environment variable format at line 2: missing '='"},
		{desc: "empty name", content: "='v'\n", key: "KEY", wantErr: "at line 1: empty variable name"},
		{desc: "blank before '='", content: "KEY ='v'\n", key: "KEY", wantErr: "at line 1: whitespace before '=' is not allowed"},
		{desc: "unquoted value", content: "KEY=value\n", key: "KEY", wantErr: "at line 1: value must be enclosed in single quotes"},
		{desc: "double quotes", content: `KEY="value"` + "\n", key: "KEY", wantErr: "at line 1: value must be enclosed in single quotes"},
		{desc: "nothing after '='", content: "KEY=\n", key: "KEY", wantErr: "at line 1: value must be enclosed in single quotes"},
		{desc: "content after the closing quote", content: "KEY='v' x\n", key: "KEY", wantErr: "at line 1: unexpected content after closing quote"},
		{desc: "content after a multi-line value names its last line", content: "KEY='a\nb' x\n", key: "KEY", wantErr: "at line 2: unexpected content after closing quote"},
		{desc: "unclosed quote names its first line", content: "A='a'\nKEY='v\nmore\n", key: "KEY", wantErr: "starting at line 2: unclosed single quote"},
		{desc: "malformed line before the key", content: "oops\nKEY='v'\n", key: "KEY", wantErr: "at line 1: missing '='"},
		{desc: "line longer than 64 KiB", content: "A='" + strings.Repeat("x", 70<<10) + "'\nKEY='v'\n", key: "KEY", wantErr: "token too long"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := parseEnv(strings.NewReader(tc.content), "/vol/env", tc.key)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseEnv: %v", err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
