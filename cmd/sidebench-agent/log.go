package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"sync"

	"github.com/sidebench/sidebench/harness/agentlog"
)

// Lifecycle events the agent appends to the shared log (harness/agentlog
// is the contract with the kube backend).
const (
	evExec           = agentlog.Exec
	evStart          = agentlog.Start
	evStarted        = agentlog.Started
	evReady          = agentlog.Ready
	evUnhealthy      = agentlog.Unhealthy
	evSigterm        = agentlog.Sigterm
	evSigtermIgnored = agentlog.SigtermIgnored
	evExit           = agentlog.Exit
	evOOMNotEnforced = agentlog.OOMNotEnforced
	evPostStartBegin = agentlog.PostStartBegin
	evPostStartEnd   = agentlog.PostStartEnd
	evPreStopBegin   = agentlog.PreStopBegin
	evPreStopEnd     = agentlog.PreStopEnd
	evProbe          = agentlog.Probe
	evOOMTrigger     = agentlog.OOMTrigger
	evPeerExit       = agentlog.PeerExit
)

// Line is one lifecycle line of the shared log.
type Line = agentlog.Line

// logger appends lines with one O_APPEND write each, so that the
// containers of a pod sharing one emptyDir file never interleave within a
// line. A nil file (no SIDEBENCH_LOG) drops lines.
type logger struct {
	mu  sync.Mutex
	f   *os.File
	now func() int64
	c   *config
	// out is where SIDEBENCH_STDOUT mirrors lines: the process's stdout, or
	// for an exec'd probe or hook the main process's (see mirrorToMain).
	out *os.File
}

func openLog(c *config, now func() int64) (*logger, error) {
	l := &logger{now: now, c: c, out: os.Stdout}
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
	if l.c.Stdout && l.out != nil {
		_, _ = l.out.Write(b)
	}
	return t
}

func (l *logger) close() {
	if l.f != nil {
		_ = l.f.Close()
	}
	if l.out != nil && l.out != os.Stdout {
		_ = l.out.Close()
	}
}

// mirrorToMain points the stdout mirror at the main process's stdout: an
// exec'd probe or hook's own stdout goes back to the kubelet, not into the
// container log the kube backend follows, while /proc/PID/fd/1 of the
// main process is the container log's pipe. Without it (no such process,
// another pid namespace) the lines stay in the shared file only.
func (l *logger) mirrorToMain(pid int) {
	l.out = nil
	if pid <= 0 || pid == os.Getpid() {
		return
	}
	if f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/fd/1", os.O_WRONLY|os.O_APPEND, 0); err == nil {
		l.out = f
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
