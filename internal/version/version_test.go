package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bi        *debug.BuildInfo
		ok        bool
		want      Info
		str, shrt string
	}{
		{"no build info", nil, false, Info{Version: "dev"}, "dev", "dev"},
		{"devel without vcs", &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Version: "(devel)"}}, true,
			Info{Version: "dev", GoVersion: "go1.26"}, "dev", "dev"},
		{"stamped clean", &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Version: "v0.0.0-20261130043412-c4219a82443d"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "c4219a82443d6b2fa6376f9e3fb7a1ad2957cf37"}, {Key: "vcs.modified", Value: "false"}}}, true,
			Info{Version: "v0.0.0-20261130043412-c4219a82443d", Revision: "c4219a82443d6b2fa6376f9e3fb7a1ad2957cf37", GoVersion: "go1.26"},
			"v0.0.0-20261130043412-c4219a82443d (c4219a82443d)", "v0.0.0-20261130043412-c4219a82443d"},
		{"stamped dirty", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261130043412-c4219a82443d+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "c4219a82443d6b2f"}, {Key: "vcs.modified", Value: "true"}}}, true,
			Info{Version: "v0.0.0-20261130043412-c4219a82443d", Revision: "c4219a82443d6b2f", Modified: true},
			"v0.0.0-20261130043412-c4219a82443d (c4219a82443d, modified)", "v0.0.0-20261130043412-c4219a82443d+dirty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fromBuildInfo(tc.bi, tc.ok)
			if got != tc.want {
				t.Errorf("fromBuildInfo = %+v, want %+v", got, tc.want)
			}
			if s := got.String(); s != tc.str {
				t.Errorf("String = %q, want %q", s, tc.str)
			}
			if s := got.Short(); s != tc.shrt {
				t.Errorf("Short = %q, want %q", s, tc.shrt)
			}
		})
	}
}

func TestOverride(t *testing.T) {
	defer func(o string) { Override = o }(Override)
	Override = "v9.9.9"
	if got := fromBuildInfo(nil, false).Version; got != "v9.9.9" {
		t.Errorf("with Override: %q", got)
	}
}
