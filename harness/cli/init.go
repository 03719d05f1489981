package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
)

type initFlags struct {
	from  string
	force bool
}

const initLong = `Write a scenario file around real manifests: each Pod, Deployment,
StatefulSet, DaemonSet, ReplicaSet, Job or CronJob of --from becomes a
workload whose pod template is pasted as is (labels kept; other metadata,
status and ephemeral containers dropped). What a manifest cannot say —
how long each container takes to start, pass its probes and stop — is
filled with defaults, each commented with what to measure on a real
cluster to replace it. The scenario compares kep753 with no sidecar
support under kubelet crashes; edit it, then validate and run it.

--from - reads the manifests from stdin (kubectl get ... -o yaml | ...).
Without --from, the scenario holds an example pod to replace.

The file is validated once written: a template sidebench cannot model is
reported (file:line:col, exit 2) and left for you to edit.`

func newInitCommand(streams IOStreams) *cobra.Command {
	f := &initFlags{}
	cmd := &cobra.Command{
		Use:   "init FILE.yaml [--from MANIFEST.yaml|-]",
		Short: "Scaffold a scenario from a Pod, Deployment or Job manifest",
		Long:  initLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("exactly one FILE.yaml (the scenario to write) is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInit(streams, f, args[0])
		},
	}
	cmd.Flags().StringVar(&f.from, "from", "", "manifest file (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob; several documents allowed), or - for stdin")
	cmd.Flags().BoolVar(&f.force, "force", false, "overwrite FILE if it exists (never a Kubernetes manifest)")
	return cmd
}

func runInit(streams IOStreams, f *initFlags, out string) error {
	if old, err := os.ReadFile(out); err == nil {
		// FILE is what init writes. A manifest there is the user's input
		// given in the wrong place ('init deploy.yaml'): never overwrite
		// it, not even with --force.
		if kind := scenario.ManifestKind(old); kind != "" {
			base := strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
			return usageErr("%s holds a %s manifest: init writes FILE, a new scenario, and reads manifests with --from (sidebench init %s-scenario.yaml --from %s); it never overwrites a manifest", out, kind, base, out)
		}
		if !f.force {
			return usageErr("%s exists; pass --force to overwrite it", out)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return usageErr("%s: %v", out, unwrapPathErr(err))
	}
	in := scenario.ScaffoldInput{Name: out}
	switch f.from {
	case "":
	case "-":
		b, err := io.ReadAll(streams.In)
		if err != nil {
			return usageErr("--from -: reading stdin: %v", err)
		}
		in.Source, in.Manifest = "stdin", b
	default:
		b, err := os.ReadFile(f.from)
		if err != nil {
			return usageErr("--from: %v", unwrapPathErr(err))
		}
		in.Source, in.Manifest = f.from, b
	}
	// An empty --from (kubectl printed nothing: a typo'd pod name) used to
	// scaffold the example pod, as if no --from had been given.
	if f.from != "" && len(bytes.TrimSpace(in.Manifest)) == 0 {
		what := f.from
		if f.from == "-" {
			what = "- (stdin)"
		}
		return usageErr("--from %s: empty, no manifest to scaffold from (without --from, init writes an example pod)", what)
	}
	data, err := scenario.Scaffold(in)
	if err != nil {
		return usageErr("%v", err)
	}
	if err := rundir.WriteFileAtomic(out, data); err != nil {
		return asInternal(err)
	}
	s, err := scenario.LoadBytes(out, data)
	if err != nil {
		fmt.Fprintln(streams.ErrOut, err)
		fmt.Fprintf(streams.ErrOut, "sidebench: wrote %s, but its pod template is not valid for sidebench (above); edit it, then: sidebench validate %s\n", out, out)
		return silent(ExitUsage)
	}
	for _, w := range s.Warnings() {
		fmt.Fprintln(streams.ErrOut, w)
	}
	sidecars := 0
	for _, w := range s.Workloads {
		for _, c := range w.Template.Spec.InitContainers {
			if c.RestartPolicy != nil && string(*c.RestartPolicy) == "Always" {
				sidecars++
			}
		}
	}
	var names []string
	for _, w := range s.Workloads {
		names = append(names, w.Name)
	}
	fmt.Fprintf(streams.Out, "wrote %s: scenario %s, workload(s) %s, %d native sidecar(s), %d pods/trial\n", out, s.Metadata.Name, strings.Join(names, ", "), sidecars, s.TotalPods())
	fmt.Fprintf(streams.Out, "next: edit the behaviours (each says what to measure), then\n  sidebench validate %s && sidebench run %s\n", out, out)
	return nil
}
