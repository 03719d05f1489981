package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Exits a process cannot log (SIGKILL, the kernel's OOM kill) are
// witnessed by the other containers of the pod: every agent holds an
// exclusive flock on its own file in the shared emptyDir for its whole
// life, and waits for the locks of the others. The kernel drops a lock
// when its holder dies, whatever killed it, so the waiter wakes at once
// and logs a peer-exit line: an upper bound of the exit time within
// microseconds, on the node's clock, where the pod status only says
// "before this watch update" (and its finishedAt has one second).

const (
	lockSuffix = ".lock"
	deadSuffix = ".dead" // marker: the holder was seen dead; new agents skip the lock
)

// lockName is the lock file of one container attempt.
func lockName(container string, attempt uint32) string {
	return fmt.Sprintf("%s.%d%s", container, attempt, lockSuffix)
}

// holdLock creates and locks this attempt's file. It is locked under a
// temporary name and renamed into place, so a witness never locks it
// first. The file must stay open for the life of the process.
func holdLock(dir, container string, attempt uint32) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	name := lockName(container, attempt)
	tmp := filepath.Join(dir, "."+name+fmt.Sprintf(".%d", os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// witness watches dir for the lock files of other container attempts and
// logs a peer-exit line ("<container> <attempt>") when one's holder dies.
// It runs until the process exits.
func witness(dir, self string, l *logger, poll time.Duration) {
	watched := map[string]bool{self: true}
	for {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			name := e.Name()
			if !strings.HasSuffix(name, lockSuffix) || strings.HasPrefix(name, ".") || watched[name] {
				continue
			}
			watched[name] = true
			if _, err := os.Stat(filepath.Join(dir, name+deadSuffix)); err == nil {
				continue // died before this agent began
			}
			go waitPeer(dir, name, l)
		}
		time.Sleep(poll)
	}
}

// waitPeer blocks until the holder of name releases its lock (dies).
func waitPeer(dir, name string, l *logger) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return
	}
	peer := strings.TrimSuffix(name, lockSuffix)
	if i := strings.LastIndexByte(peer, '.'); i > 0 {
		peer = peer[:i] + " " + peer[i+1:]
	}
	l.event(evPeerExit, nil, peer)
	if m, err := os.OpenFile(filepath.Join(dir, name+deadSuffix), os.O_CREATE|os.O_WRONLY, 0o666); err == nil {
		m.Close()
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
