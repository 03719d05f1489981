package main

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
)

// Lifecycle events the agent appends to the shared log.
const (
	evExec           = "exec"             // the process began (before the start latency)
	evStart          = "start"            // start latency over: the modelled process start (t0)
	evStarted        = "started"          // startup probe file created
	evReady          = "ready"            // readiness probe file created
	evUnhealthy      = "unhealthy"        // liveness starts failing
	evSigterm        = "sigterm"          // SIGTERM received
	evSigtermIgnored = "sigterm-ignored"  // termHandling never: SIGTERM ignored
	evExit           = "exit"             // about to exit with code (cause in detail)
	evOOMNotEnforced = "oom-not-enforced" // memory grew to twice the limit and no OOM killer came
	evPostStartBegin = "poststart-begin"
	evPostStartEnd   = "poststart-end"
	evPreStopBegin   = "prestop-begin"
	evPreStopEnd     = "prestop-end"
)

// Line is one lifecycle line of the shared log (JSON, one per line).
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

// logger appends lines with one O_APPEND write each, so that the
// containers of a pod sharing one emptyDir file never interleave within a
// line. A nil file (no SIDEBENCH_LOG) drops lines.
type logger struct {
	mu  sync.Mutex
	f   *os.File
	now func() int64
	c   *config
}

func openLog(c *config, now func() int64) (*logger, error) {
	l := &logger{now: now, c: c}
	if c.LogPath == "" {
		return l, nil
	}
	f, err := os.OpenFile(c.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	l.f = f
	return l, nil
}

// event logs ev with an optional code and returns its timestamp.
func (l *logger) event(ev string, code *int32, detail string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.now()
	if l.f == nil && !l.c.Stdout {
		return t
	}
	b, _ := json.Marshal(Line{T: t, Pod: l.c.podKey(), UID: l.c.PodUID, Container: l.c.Container,
		Attempt: l.c.Attempt, Event: ev, Code: code, Detail: detail, PID: os.Getpid()})
	b = append(b, '\n')
	if l.f != nil {
		_, _ = l.f.Write(b) // a lost line must not kill the container
	}
	if l.c.Stdout {
		_, _ = os.Stdout.Write(b)
	}
	return t
}

func (l *logger) close() {
	if l.f != nil {
		_ = l.f.Close()
	}
}

func codePtr(c int32) *int32 { return &c }

// countAttempts returns how many earlier attempts of this container the log
// records ("exec" lines of the same pod, UID and container): the attempt
// number of a new process when the backend did not pass one. The emptyDir
// outlives container restarts, so this is the kubelet's restart count as
// long as every attempt reached its first line.
func countAttempts(c *config) uint32 {
	if c.LogPath == "" {
		return 0
	}
	f, err := os.Open(c.LogPath)
	if err != nil {
		return 0
	}
	defer f.Close()
	var n uint32
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ln Line
		if json.Unmarshal(sc.Bytes(), &ln) != nil {
			continue
		}
		if ln.Event == evExec && ln.Pod == c.podKey() && ln.Container == c.Container && ln.UID == c.PodUID {
			n++
		}
	}
	return n
}
