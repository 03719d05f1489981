package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
)

// Environment variables the agent reads. The kube backend sets them in
// every container it creates; SIDEBENCH_POD (and SIDEBENCH_POD_UID) come
// from the downward API (metadata.name, metadata.uid).
const (
	envBehavior  = "SIDEBENCH_BEHAVIOR"  // harness/behavior.Container as JSON; unset fields keep behavior.Default()
	envSeed      = "SIDEBENCH_SEED"      // trial seed (uint64, decimal)
	envPod       = "SIDEBENCH_POD"       // pod name (downward API metadata.name)
	envPodUID    = "SIDEBENCH_POD_UID"   // optional, copied into every log line
	envNamespace = "SIDEBENCH_NAMESPACE" // optional (downward API metadata.namespace); the stream key is then "namespace/name"
	envContainer = "SIDEBENCH_CONTAINER" // container name, as in the pod spec
	envAttempt   = "SIDEBENCH_ATTEMPT"   // optional attempt number; default: counted from the log
	envLog       = "SIDEBENCH_LOG"       // shared lifecycle log (an emptyDir), e.g. /sidebench/log.jsonl
	envDir       = "SIDEBENCH_DIR"       // probe files; default /tmp/sidebench (per container instance)
	envStdout    = "SIDEBENCH_STDOUT"    // "1": also write every log line to stdout (container logs)
)

// DefaultDir holds the probe files. /tmp is in the container's own writable
// layer, so a restarted container starts without them.
const DefaultDir = "/tmp/sidebench"

// Probe and state files in the agent's directory.
const (
	fileStarted   = "started"   // startup probe passes once it exists
	fileReady     = "ready"     // readiness probe passes once it exists
	fileUnhealthy = "unhealthy" // liveness probe fails once it exists
	fileState     = "state.json"
	// forceFailPrefix+probe ("force-fail-ready"...) makes that probe fail
	// whatever the plan says: the kube backend's ProbeFailure fault creates
	// and removes it with an exec.
	forceFailPrefix = "force-fail-"
	// probePrefix+probe holds the last result the probe command logged
	// ("success"/"failure"), so that only changes are logged.
	probePrefix = "probe-"
)

// config is everything the agent knows about itself.
type config struct {
	Behavior  behavior.Container
	Seed      uint64
	Namespace string
	Pod       string
	PodUID    string
	Container string
	Attempt   uint32
	// AttemptSet is false when SIDEBENCH_ATTEMPT was not given.
	AttemptSet bool
	LogPath    string
	Dir        string
	// Stdout mirrors the log lines to stdout, where the API's container
	// logs keep them (current and previous instance) after the pod's
	// containers exited.
	Stdout bool
}

// loadConfig reads the environment through getenv.
func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		Behavior:  behavior.Default(),
		Namespace: getenv(envNamespace),
		Pod:       getenv(envPod),
		PodUID:    getenv(envPodUID),
		Container: getenv(envContainer),
		LogPath:   getenv(envLog),
		Dir:       getenv(envDir),
		Stdout:    getenv(envStdout) == "1",
	}
	var errs []error
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	if c.Pod == "" {
		c.Pod = getenv("HOSTNAME") // a pod's hostname is its name unless spec.hostname is set
	}
	if c.Pod == "" {
		errs = append(errs, fmt.Errorf("%s is not set (use the downward API: fieldRef metadata.name)", envPod))
	}
	if c.Container == "" {
		errs = append(errs, fmt.Errorf("%s is not set (the container's name in the pod spec)", envContainer))
	}
	if s := getenv(envSeed); s != "" {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: not an unsigned decimal integer", envSeed, s))
		}
		c.Seed = v
	}
	if s := getenv(envAttempt); s != "" {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: not an unsigned decimal integer", envAttempt, s))
		}
		c.Attempt, c.AttemptSet = uint32(v), true
	}
	if s := getenv(envBehavior); s != "" {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.Behavior); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", envBehavior, err))
		} else if err := c.Behavior.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", envBehavior, err))
		}
	}
	return c, errors.Join(errs...)
}

// podKey is the pod's key in the behaviour streams: "namespace/name" when
// the namespace is known, as the local backend's CRI server keys it.
func (c *config) podKey() string {
	if c.Namespace != "" {
		return c.Namespace + "/" + c.Pod
	}
	return c.Pod
}

// plan draws the attempt's plan exactly as the sim and the CRI server do.
func (c *config) plan() behavior.Plan {
	return c.Behavior.Draw(behavior.ContainerKey(c.Seed, c.podKey(), c.Container, c.Attempt).Rand())
}

func (c *config) path(name string) string { return filepath.Join(c.Dir, name) }

// state is what the main process records for its probes and hooks, which
// run as separate processes in the same container.
type state struct {
	Attempt uint32 `json:"attempt"`
	Start   int64  `json:"start"` // unix ns of the "start" event; 0 before
	// PID of the main process, which `sidebench-agent oom` signals (it is
	// pid 1 unless the pod shares its process namespace).
	PID int `json:"pid,omitempty"`
}

func writeState(c *config, s state) error {
	b, _ := json.Marshal(s)
	tmp := c.path(fileState + ".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.path(fileState))
}

// readState waits up to wait for the main process's state file: a
// postStart hook can run before the agent wrote it.
func readState(c *config, wait time.Duration) (state, bool) {
	deadline := time.Now().Add(wait)
	for {
		b, err := os.ReadFile(c.path(fileState))
		if err == nil {
			var s state
			if json.Unmarshal(b, &s) == nil {
				return s, true
			}
		}
		if time.Now().After(deadline) {
			return state{}, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
