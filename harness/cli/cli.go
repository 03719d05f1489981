// Package cli holds sidebench's cobra commands. main is a stub
// (os.Exit(cli.Main())); everything is testable in-process through Run with
// injected streams. Commands parse flags and call the runner, the scenario
// loader, the checker or the history reader; they hold no measurement logic.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/internal/version"
)

// Exit codes, documented in `sidebench --help`.
const (
	ExitOK       = 0 // every criterion met
	ExitFailed   = 1 // a violation or a criterion failed
	ExitUsage    = 2 // usage or validation error
	ExitInternal = 3 // internal error
)

// IOStreams are the command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// silent is an exit code whose message was already printed.
func silent(code int) error { return &exitError{code: code} }

// Main runs the CLI with the process's arguments and streams and returns
// the exit code. SIGINT and SIGTERM cancel the context: commands stop
// cleanly and what was recorded stays on disk, marked partial.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, restore the default behaviour: a second
		// Ctrl-C kills the process at once.
		<-ctx.Done()
		stop()
	}()
	return RunContext(ctx, IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
}

// Run runs the CLI in-process and returns the exit code.
func Run(streams IOStreams, args []string) int {
	return RunContext(context.Background(), streams, args)
}

// RunContext is Run with a context (cancellation = Ctrl-C).
func RunContext(ctx context.Context, streams IOStreams, args []string) int {
	return runWith(ctx, streams, defaultDeps(), args)
}

// deps are what the commands get from outside: tests replace them (there
// is no package-level state a command writes).
type deps struct {
	// newBackend is the composition root: a backend name and the flags
	// give a Backend.
	newBackend func(name string, f *backendFlags, log io.Writer) (backend.Backend, error)
	// memory is where run and soak find and set the Go runtime's soft
	// memory limit.
	memory memoryEnv
}

func defaultDeps() deps { return deps{newBackend: newBackend, memory: processMemory()} }

func runWith(ctx context.Context, streams IOStreams, d deps, args []string) int {
	root := newRootCommand(streams, d)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if cmd == nil {
		cmd = root
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(streams.ErrOut, "%s: %s\n", cmd.CommandPath(), withoutPath(ee.err.Error(), cmd))
		}
		return ee.code
	}
	// Errors cobra raises itself: unknown command (with "Did you mean
	// this?"), unknown flag, bad arguments.
	fmt.Fprintf(streams.ErrOut, "%s: %s\n", cmd.CommandPath(), strings.TrimRight(withoutPath(err.Error(), cmd), "\n"))
	fmt.Fprintf(streams.ErrOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return ExitUsage
}

// withoutPath strips the command path (or its last word, or "sidebench")
// from the front of an error message, so that it is printed once.
func withoutPath(msg string, cmd *cobra.Command) string {
	for {
		trimmed := msg
		for _, p := range []string{cmd.CommandPath() + ": ", cmd.Name() + ": ", "sidebench: "} {
			trimmed = strings.TrimPrefix(trimmed, p)
		}
		if trimmed == msg {
			return msg
		}
		msg = trimmed
	}
}

const rootLong = `sidebench measures how often Kubernetes sidecar ordering guarantees (KEP-753)
break under real faults, and what they cost in pod startup latency.

A scenario file (docs/scenarios.md) describes workloads (real pod templates
with sidecars), container behaviours, faults and pass criteria. 'sidebench run'
runs it on a backend, records a history per trial, checks the ordering
invariants over it and measures pod startup latency.

Exit codes:
  0  every criterion met
  1  a violation or a criterion failed
  2  usage or validation error
  3  internal error`

// NewRootCommand builds the command tree.
func NewRootCommand(streams IOStreams) *cobra.Command { return newRootCommand(streams, defaultDeps()) }

func newRootCommand(streams IOStreams, d deps) *cobra.Command {
	root := &cobra.Command{
		Use:           "sidebench",
		Short:         "Benchmark Kubernetes sidecar ordering guarantees under faults",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		// No Args validator: cobra then reports an unknown command with
		// "Did you mean this?" suggestions.
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%v", err)
	})
	root.AddCommand(
		newRunCommand(streams, d),
		newSoakCommand(streams, d),
		newValidateCommand(streams, d),
		newCheckCommand(streams),
		newExplainCommand(streams),
		newCompareCommand(streams),
		newGraduateCommand(streams),
		newMergeCommand(streams),
		newTrendCommand(streams),
		newVersionCommand(streams),
		newClusterCommand(streams),
		newInitCommand(streams),
	)
	// cobra's completion command (bash, zsh, fish, powershell) is added at
	// the first Execute; add it now so that it gets its example too.
	root.InitDefaultCompletionCmd()
	setExamples(root)
	return root
}

// exactFiles is cobra.MinimumNArgs(1) with a usage exit code.
func atLeastOne(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usageErr("%s: at least one %s is required", cmd.CommandPath(), what)
		}
		return nil
	}
}

func newVersionCommand(streams IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the sidebench version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := version.Get()
			fmt.Fprintf(streams.Out, "sidebench %s\n", v)
			if v.GoVersion != "" {
				fmt.Fprintf(streams.Out, "built with %s\n", v.GoVersion)
			}
			return nil
		},
	}
}
