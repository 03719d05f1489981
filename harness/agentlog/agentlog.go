// Package agentlog is the contract between sidebench-agent, the process in
// every container the kube backend creates, and the backend that reads its
// lifecycle log: one JSON object per line, nanosecond timestamps on the
// node's clock. It imports the standard library only.
package agentlog

import (
	"bufio"
	"encoding/json"
	"io"
)

// Lifecycle events.
const (
	Exec           = "exec"             // the process began (before the start latency)
	Start          = "start"            // start latency over: the modelled process start
	Started        = "started"          // startup probe file created
	Ready          = "ready"            // readiness probe file created
	Unhealthy      = "unhealthy"        // liveness starts failing
	Sigterm        = "sigterm"          // SIGTERM received
	SigtermIgnored = "sigterm-ignored"  // termHandling never: SIGTERM ignored
	Exit           = "exit"             // about to exit with Code (cause in Detail)
	OOMNotEnforced = "oom-not-enforced" // memory grew to twice the limit and no OOM killer came
	PostStartBegin = "poststart-begin"
	PostStartEnd   = "poststart-end"
	PreStopBegin   = "prestop-begin"
	PreStopEnd     = "prestop-end"
	// Probe is a probe result as the kubelet saw it (the exec probe's exit
	// status), logged when it differs from the previous one: Detail
	// "startup success", "ready failure", "live failure"... The kubelet acts
	// on a startup success at once (the next container starts), so this
	// line, not the published started flag, orders a sidecar's start.
	Probe = "probe"
	// OOMTrigger: `sidebench-agent oom` asked the main process to grow its
	// memory until the kernel OOM-kills it (the kube backend's oom-kill
	// fault without Chaos Mesh).
	OOMTrigger = "oom-trigger"
	// PeerExit: another container attempt of the pod died (its lock in the
	// shared emptyDir was released), Detail "<container> <attempt>". An
	// upper bound of that attempt's exit time, from a witness on the same
	// node: the only precise time of exits the dying process cannot log
	// (SIGKILL, the kernel's OOM kill).
	PeerExit = "peer-exit"
)

// Line is one lifecycle line.
type Line struct {
	T         int64  `json:"t"` // unix nanoseconds, the node's wall clock
	Pod       string `json:"pod"`
	UID       string `json:"uid,omitempty"`
	Container string `json:"container"`
	Attempt   uint32 `json:"attempt"`
	Event     string `json:"event"`
	Code      *int32 `json:"code,omitempty"`
	Detail    string `json:"detail,omitempty"`
	PID       int    `json:"pid"`
}

// Key identifies a line across copies (the shared file, each container's
// stdout): the same event of the same attempt at the same nanosecond.
type Key struct {
	UID, Container string
	Attempt        uint32
	Event          string
	T              int64
}

// Key returns the line's identity.
func (l *Line) Key() Key {
	return Key{UID: l.UID, Container: l.Container, Attempt: l.Attempt, Event: l.Event, T: l.T}
}

// Parse reads lines from r, calling fn for every well-formed one. Other
// output (a container's stdout may carry anything) is skipped and counted.
func Parse(r io.Reader, fn func(Line)) (skipped int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		b := sc.Bytes()
		if len(b) == 0 || b[0] != '{' {
			skipped++
			continue
		}
		var l Line
		if json.Unmarshal(b, &l) != nil || l.Event == "" || l.T == 0 {
			skipped++
			continue
		}
		fn(l)
	}
	return skipped, sc.Err()
}
