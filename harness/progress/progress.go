// Package progress reports the progress of a sidebench run: one mpb bar per
// scenario on a terminal, periodic plain lines otherwise. It is the only
// importer of mpb.
//
// Progress goes to stderr (the caller passes it), as kubectl, kind and
// kube-burner do, so that stdout keeps only results. Every other line a
// command writes to that stream while the bars are live must go through
// Reporter.Writer: mpb redraws its bars by moving the cursor up over the
// lines it drew last time and clearing the screen below, so a line written
// around it is erased at the next redraw and the bar above it is left
// behind, duplicated. Lines written through Writer are printed above the
// bars by mpb itself.
//
// Bars count pods (PodsDone as pods finish inside a trial, TrialDone when a
// trial is committed) and show the rate and the ETA from the reporter's
// clock.
//
// mpb loses output when it is not writing to a terminal (writes are
// buffered and dropped, ECOSYSTEM.md §4) and spams CI logs when forced to
// refresh, so off a TTY, or when CI is set, no mpb container is created at
// all: the reporter prints one plain line per scenario at start and end and
// a summary line every Interval, and log lines pass straight through.
package progress

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Mode selects how progress is shown.
type Mode uint8

const (
	// Auto picks Bars on a terminal (and CI unset), Plain otherwise.
	Auto Mode = iota
	// Bars draws mpb bars.
	Bars
	// Plain prints periodic lines.
	Plain
	// Quiet prints no progress (log lines still pass through Writer).
	Quiet
)

// Options configure a Reporter.
type Options struct {
	Mode Mode
	// Interval is the period of plain summary lines (default 10s).
	Interval time.Duration
	// Now is the clock of rates and ETAs (default time.Now); tests pass a
	// fake one.
	Now func() time.Time
}

// Reporter shows the progress of scenarios.
type Reporter struct {
	mu       sync.Mutex
	w        io.Writer
	mode     Mode
	p        *mpb.Progress
	now      func() time.Time
	interval time.Duration
	scen     []*Scenario
	stop     chan struct{}
	done     chan struct{}
	closed   bool
	log      lineWriter
}

// IsTerminal reports whether w is a terminal with a known size and CI is
// unset. (mpb gives up silently on a terminal whose size it cannot read,
// such as a pty created without one.)
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("CI") != "" {
		return false
	}
	if !term.IsTerminal(int(f.Fd())) {
		return false
	}
	width, _, err := term.GetSize(int(f.Fd()))
	return err == nil && width > 0
}

// New returns a Reporter writing to w (the command's stderr).
func New(w io.Writer, o Options) *Reporter {
	r := &Reporter{w: w, mode: o.Mode, now: o.Now, interval: o.Interval}
	r.log.r = r
	if r.now == nil {
		r.now = time.Now
	}
	if r.interval <= 0 {
		r.interval = 10 * time.Second
	}
	if r.mode == Auto {
		r.mode = Plain
		if IsTerminal(w) {
			r.mode = Bars
		}
	}
	switch r.mode {
	case Bars:
		r.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(barRefresh))
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.tick(barRefresh/2, r.syncBars)
	case Plain:
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.tick(r.interval, r.summary)
	}
	return r
}

// barRefresh is how often mpb redraws the bars.
const barRefresh = 200 * time.Millisecond

// syncBars moves every bar to its scenario's counters. PodsDone only
// counts (a pod costs a lock, not a round trip to mpb's goroutines, at
// 50,000 pods/s); the bars follow here, twice per redraw.
func (r *Reporter) syncBars() {
	r.mu.Lock()
	scen := append([]*Scenario(nil), r.scen...)
	r.mu.Unlock()
	for _, s := range scen {
		s.change(func() {})
	}
}

// Mode returns the effective mode.
func (r *Reporter) Mode() Mode { return r.mode }

// Writer returns the writer for everything else a command prints to the
// reporter's stream while the reporter is open (warnings, backend logs,
// "skipping ..."): on a terminal its lines are printed above the bars by
// mpb, so that no redraw erases them; otherwise they are written straight
// through, never split by a progress line. Lines are passed on whole: a
// partial line waits for its newline, or for Close. After Close the writer
// writes straight to the stream. It is safe for concurrent use.
func (r *Reporter) Writer() io.Writer { return &r.log }

// Logf prints a line through Writer.
func (r *Reporter) Logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	io.WriteString(&r.log, line)
}

// lineWriter buffers a partial line and hands complete lines to emit.
type lineWriter struct {
	r   *Reporter
	mu  sync.Mutex
	buf []byte
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	i := bytes.LastIndexByte(l.buf, '\n')
	if i < 0 {
		return len(b), nil
	}
	lines := l.buf[:i+1]
	err := l.r.emit(lines)
	l.buf = append(l.buf[:0], l.buf[i+1:]...)
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// flush emits a pending partial line, newline-terminated.
func (l *lineWriter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.r.emit(append(l.buf, '\n'))
		l.buf = l.buf[:0]
	}
}

// emit writes whole lines: through mpb while the bars are live (mpb's
// Write blocks until its render loop takes them, so r.mu must not be held:
// the decorators take it), straight to w otherwise.
func (r *Reporter) emit(lines []byte) error {
	if r.p != nil {
		if _, err := r.p.Write(lines); err == nil {
			return nil
		}
		// The container is done (Close ran): write through.
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.w.Write(lines)
	return err
}

// Scenario tracks one scenario: trials and pods done, violations so far.
//
// Locks: mpb calls the decorators from the bar's own goroutine, the same
// one that applies bar updates, and they take r.mu. So no bar method is
// called with r.mu held; barMu (taken before r.mu, never by a decorator)
// keeps the updates in order.
type Scenario struct {
	r      *Reporter
	name   string
	trials int
	pods   int
	done   int
	// podsCommitted sums TrialDone's pods, podsStreamed PodsDone's: pods
	// done is the larger, so a caller may report pods as they finish, at
	// commit, or both, without counting them twice.
	podsCommitted int
	podsStreamed  int
	violations    int
	start         time.Time
	finished      bool

	barMu sync.Mutex
	bar   *mpb.Bar
}

// AddScenario registers a scenario with its number of trials and pods
// (pods over all trials; 0 if unknown). trials <= 0 is open-ended (soak).
func (r *Reporter) AddScenario(name string, trials, pods int) *Scenario {
	r.mu.Lock()
	s := &Scenario{r: r, name: name, trials: trials, pods: pods, start: r.now()}
	r.scen = append(r.scen, s)
	switch r.mode {
	case Plain:
		if trials > 0 {
			fmt.Fprintf(r.w, "progress: %s: started, %d trials, %d pods\n", name, trials, pods)
		} else {
			fmt.Fprintf(r.w, "progress: %s: started, open-ended\n", name)
		}
	}
	r.mu.Unlock()
	if r.mode == Bars {
		s.barMu.Lock()
		// Total 0: mpb never completes the bar on its own (the pods may
		// reach their estimate before the last trial is committed); change
		// sets the total shown, Done completes the bar.
		s.bar = r.p.AddBar(0,
			mpb.PrependDecorators(
				decor.Name(name, decor.WCSyncSpaceR),
				decor.Any(func(decor.Statistics) string { return s.trialsText() }, decor.WCSyncWidth),
			),
			mpb.AppendDecorators(
				decor.Any(func(decor.Statistics) string { return s.stats() }, decor.WCSyncSpace),
			))
		s.barMu.Unlock()
		s.change(func() {})
	}
	return s
}

func (s *Scenario) podsDoneLocked() int { return max(s.podsStreamed, s.podsCommitted) }

// change applies f to the counters under r.mu, then moves the bar to the
// pods done (trials done when the pod count is unknown).
func (s *Scenario) change(f func()) {
	s.barMu.Lock()
	defer s.barMu.Unlock()
	s.r.mu.Lock()
	f()
	var total, cur int
	switch {
	case s.pods > 0 && s.trials > 0:
		total, cur = s.pods, s.podsDoneLocked()
	case s.trials > 0:
		total, cur = s.trials, s.done
	default: // open-ended: the bar fills up to the trial in flight
		total, cur = s.done+1, s.done
	}
	live := !s.finished
	s.r.mu.Unlock()
	if s.bar != nil && live {
		s.bar.SetTotal(int64(total), false)
		s.bar.SetCurrent(int64(cur))
	}
}

// PodsDone records n more pods finished (checked) in running trials, so
// that the bar advances within a long trial (at the next sync: see
// syncBars). Safe for concurrent use, and cheap enough to call per pod.
func (s *Scenario) PodsDone(n int) {
	s.r.mu.Lock()
	s.podsStreamed += n
	s.r.mu.Unlock()
}

// PodDone is PodsDone(1).
func (s *Scenario) PodDone() { s.PodsDone(1) }

// TrialDone records a committed trial: its pods (not counted twice when
// they were reported by PodsDone) and violations.
func (s *Scenario) TrialDone(pods, violations int) {
	s.change(func() {
		s.done++
		s.podsCommitted += pods
		s.violations += violations
	})
}

// trialsText is "2/15 trials" (or "3 trials" open-ended).
func (s *Scenario) trialsText() string {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.trials <= 0 {
		return fmt.Sprintf("%d trials", s.done)
	}
	return fmt.Sprintf("%d/%d trials", s.done, s.trials)
}

// stats renders "pods 340/600  85 pods/s  ETA 3s  violations 0" for a bar.
func (s *Scenario) stats() string {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	parts := []string{s.podsText(), s.rateText()}
	if s.finished {
		parts = append(parts, "in "+fmtDur(s.r.now().Sub(s.start)))
	} else if eta := s.eta(); eta != "" {
		parts = append(parts, "ETA "+eta)
	}
	return strings.Join(append(parts, fmt.Sprintf("violations %d", s.violations)), "  ")
}

func (s *Scenario) podsText() string {
	if s.pods <= 0 {
		return fmt.Sprintf("pods %d", s.podsDoneLocked())
	}
	return fmt.Sprintf("pods %d/%d", s.podsDoneLocked(), s.pods)
}

// rateText is the average pod rate since the scenario started.
func (s *Scenario) rateText() string {
	el := s.r.now().Sub(s.start).Seconds()
	if el <= 0 || s.podsDoneLocked() == 0 {
		return "- pods/s"
	}
	rate := float64(s.podsDoneLocked()) / el
	if rate >= 10 {
		return fmt.Sprintf("%.0f pods/s", rate)
	}
	return fmt.Sprintf("%.1f pods/s", rate)
}

// eta extrapolates the average rate over what is left: pods when their
// total is known, else trials; "" when nothing is done yet or the run is
// open-ended.
func (s *Scenario) eta() string {
	el := s.r.now().Sub(s.start)
	var done, total int
	switch {
	case s.trials <= 0:
		return ""
	case s.pods > 0 && s.podsDoneLocked() > 0:
		done, total = s.podsDoneLocked(), s.pods
	case s.done > 0:
		done, total = s.done, s.trials
	default:
		return "?"
	}
	return fmtDur(time.Duration(float64(el) / float64(done) * float64(max(total-done, 0))))
}

func fmtDur(d time.Duration) string { return d.Round(time.Second).String() }

// Done marks the scenario finished (also when it stopped early).
func (s *Scenario) Done() {
	s.barMu.Lock()
	defer s.barMu.Unlock()
	s.r.mu.Lock()
	if s.finished {
		s.r.mu.Unlock()
		return
	}
	if s.r.mode == Plain {
		fmt.Fprintf(s.r.w, "progress: %s: finished %s, %s, %s  violations %d, in %s\n", s.name, s.trialsLine(), s.podsText(),
			s.rateText(), s.violations, fmtDur(s.r.now().Sub(s.start)))
	}
	s.finished = true
	complete := s.trials <= 0 || s.done >= s.trials
	s.r.mu.Unlock()
	if s.bar != nil {
		if complete {
			s.bar.SetTotal(-1, true) // the total becomes the current: complete
		} else {
			s.bar.Abort(false)
		}
	}
}

// trialsLine is "2/15 trials" or "3 trials" (plain lines).
func (s *Scenario) trialsLine() string {
	if s.trials <= 0 {
		return fmt.Sprintf("%d trials", s.done)
	}
	return fmt.Sprintf("%d/%d trials", s.done, s.trials)
}

// tick calls f every period until Close.
func (r *Reporter) tick(every time.Duration, f func()) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			f()
		}
	}
}

// summary prints one plain line per running scenario.
func (r *Reporter) summary() {
	r.mu.Lock()
	defer r.mu.Unlock()
	active := make([]*Scenario, 0, len(r.scen))
	for _, s := range r.scen {
		if !s.finished {
			active = append(active, s)
		}
	}
	sort.SliceStable(active, func(i, j int) bool { return active[i].name < active[j].name })
	for _, s := range active {
		line := fmt.Sprintf("progress: %s: %s, %s, %s  violations %d", s.name, s.trialsLine(), s.podsText(), s.rateText(), s.violations)
		if eta := s.eta(); eta != "" {
			line += ", eta " + eta
		} else {
			line += ", elapsed " + fmtDur(r.now().Sub(s.start))
		}
		fmt.Fprintln(r.w, line)
	}
}

// Close stops the reporter and waits for the bars to finish drawing. A
// pending partial log line is printed first.
func (r *Reporter) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	scen := append([]*Scenario(nil), r.scen...)
	r.mu.Unlock()
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
	r.log.flush()
	for _, s := range scen {
		s.change(func() {}) // the last counts, before the bar completes
		s.Done()
	}
	if r.p != nil {
		r.p.Wait()
	}
}
