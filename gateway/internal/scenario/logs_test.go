package scenario

import (
	"errors"
	"testing"
	"time"
)

func TestParseCRILogLine(t *testing.T) {
	tests := []struct {
		desc    string
		line    string
		want    criLogLine
		wantErr bool
	}{
		{
			desc: "full stdout line from containerd",
			line: "2024-05-01T10:11:12.123456789Z stdout F hello world\n",
			want: criLogLine{Time: time.Date(2024, 5, 1, 10, 11, 12, 123456789, time.UTC), Stream: "stdout", Content: "hello world"},
		},
		{
			desc: "partial stderr line with an offset",
			line: "2024-05-01T10:11:12.5+02:00 stderr P part",
			want: criLogLine{Time: time.Date(2024, 5, 1, 8, 11, 12, 500000000, time.UTC), Stream: "stderr", Partial: true, Content: "part"},
		},
		{
			desc: "extra tags after the first",
			line: "2024-05-01T10:11:12Z stdout F:x:y content",
			want: criLogLine{Time: time.Date(2024, 5, 1, 10, 11, 12, 0, time.UTC), Stream: "stdout", Content: "content"},
		},
		{
			desc: "empty content keeps its separator",
			line: "2024-05-01T10:11:12Z stdout F ",
			want: criLogLine{Time: time.Date(2024, 5, 1, 10, 11, 12, 0, time.UTC), Stream: "stdout", Content: ""},
		},
		{desc: "docker json line", line: `{"log":"x\n","stream":"stdout"}`, wantErr: true},
		{desc: "bad timestamp", line: "yesterday stdout F x", wantErr: true},
		{desc: "unknown stream", line: "2024-05-01T10:11:12Z stdin F x", wantErr: true},
		{desc: "unknown tag", line: "2024-05-01T10:11:12Z stdout X x", wantErr: true},
		{desc: "missing tag separator", line: "2024-05-01T10:11:12Z stdout F", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := parseCRILogLine(tc.line)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parseCRILogLine(%q) = %+v, want an error", tc.line, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseCRILogLine(%q): %v", tc.line, err)
			}
			if !got.Time.Equal(tc.want.Time) || got.Stream != tc.want.Stream || got.Partial != tc.want.Partial || got.Content != tc.want.Content {
				t.Fatalf("parseCRILogLine(%q) = %+v, want %+v", tc.line, got, tc.want)
			}
		})
	}
}

func TestFindLogLine(t *testing.T) {
	const want = "splitlet-scenario-1"
	tests := []struct {
		desc        string
		log         string
		wantErr     error // nil: found
		wantAnyErr  bool
		wantContent string
	}{
		{desc: "empty log", log: "", wantErr: errLineNotYet},
		{desc: "other lines only", log: "2024-05-01T10:11:12Z stdout F other\n", wantErr: errLineNotYet},
		{desc: "line still being written", log: "2024-05-01T10:11:12Z stdout F " + want, wantErr: errLineNotYet},
		{desc: "found after another line", log: "2024-05-01T10:11:12Z stderr F warn\n2024-05-01T10:11:13Z stdout F " + want + "\n", wantContent: want},
		{desc: "prefix of the line is not the line", log: "2024-05-01T10:11:12Z stdout F " + want + "0\n", wantErr: errLineNotYet},
		{desc: "garbage is an error", log: "not a cri log\n", wantAnyErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := findLogLine(tc.log, want)
			switch {
			case tc.wantAnyErr:
				if err == nil || errors.Is(err, errLineNotYet) {
					t.Fatalf("findLogLine = %+v, %v; want a parse error", got, err)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("findLogLine = %+v, %v; want %v", got, err, tc.wantErr)
				}
			default:
				if err != nil || got.Content != tc.wantContent {
					t.Fatalf("findLogLine = %+v, %v; want content %q", got, err, tc.wantContent)
				}
			}
		})
	}
}
