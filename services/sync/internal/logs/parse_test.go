package logs

import (
	"errors"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

func TestParseCRILog(t *testing.T) {
	ts := time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC)
	cases := []struct {
		desc        string
		line        string
		wantErr     bool
		wantTime    time.Time
		wantStream  string
		wantPartial bool
		wantLog     string
	}{
		{desc: "full stdout line keeps its newline", line: "2016-10-06T00:17:09.669794202Z stdout F log content 1\n",
			wantTime: ts, wantStream: "stdout", wantLog: "log content 1\n"},
		{desc: "stderr line", line: "2016-10-06T00:17:09.669794202Z stderr F oops\n",
			wantTime: ts, wantStream: "stderr", wantLog: "oops\n"},
		{desc: "partial line loses its newline", line: "2016-10-06T00:17:09.669794202Z stdout P first half\n",
			wantTime: ts, wantStream: "stdout", wantPartial: true, wantLog: "first half"},
		{desc: "extra tags are ignored", line: "2016-10-06T00:17:09.669794202Z stdout P:future half\n",
			wantTime: ts, wantStream: "stdout", wantPartial: true, wantLog: "half"},
		{desc: "lenient fraction and a zone offset", line: "2016-10-06T02:17:09.5+02:00 stdout F x\n",
			wantTime: time.Date(2016, 10, 6, 0, 17, 9, 500000000, time.UTC), wantStream: "stdout", wantLog: "x\n"},
		{desc: "empty content", line: "2016-10-06T00:17:09.669794202Z stdout F \n",
			wantTime: ts, wantStream: "stdout", wantLog: "\n"},
		{desc: "content keeps inner spaces", line: "2016-10-06T00:17:09.669794202Z stdout F  a  b \n",
			wantTime: ts, wantStream: "stdout", wantLog: " a  b \n"},
		{desc: "no delimiter at all", line: "garbage\n", wantErr: true},
		{desc: "bad timestamp", line: "yesterday stdout F x\n", wantErr: true},
		{desc: "unknown stream", line: "2016-10-06T00:17:09.669794202Z stdin F x\n", wantErr: true},
		{desc: "tag without content delimiter", line: "2016-10-06T00:17:09.669794202Z stdout F\n", wantErr: true},
		{desc: "docker json is not CRI", line: `{"log":"x\n","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}` + "\n", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			var msg logMessage
			err := parseCRILog([]byte(tc.line), &msg)
			if tc.wantErr {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want one wrapping ErrInvalidArgument", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !msg.timestamp.Equal(tc.wantTime) || msg.stream != tc.wantStream || msg.partial != tc.wantPartial || string(msg.log) != tc.wantLog {
				t.Errorf("got {%v %s partial=%v %q}, want {%v %s partial=%v %q}",
					msg.timestamp, msg.stream, msg.partial, msg.log, tc.wantTime, tc.wantStream, tc.wantPartial, tc.wantLog)
			}
		})
	}
}
