// Package progress reports the progress of a sidebench run: one mpb bar per
// scenario on a terminal, periodic plain lines otherwise. It is the only
// importer of mpb.
//
// mpb loses output when it is not writing to a terminal (writes are
// buffered and dropped, ECOSYSTEM.md §4) and spams CI logs when forced to
// refresh, so off a TTY, or when CI is set, no mpb container is created at
// all: the reporter prints one plain line per scenario at start and end and
// a summary line every Interval.
package progress

import (
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
	"k8s.io/utils/clock"
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
	// Quiet prints nothing.
	Quiet
)

// Options configure a Reporter.
type Options struct {
	Mode Mode
	// Interval is the period of plain summary lines (default 10s).
	Interval time.Duration
	// Clock times the plain summary lines and the elapsed/eta figures
	// (default the real clock); tests step a fake one.
	Clock clock.WithTicker
}

// Reporter shows the progress of scenarios.
type Reporter struct {
	mu       sync.Mutex
	w        io.Writer
	mode     Mode
	p        *mpb.Progress
	clock    clock.WithTicker
	interval time.Duration
	scen     []*Scenario
	stop     chan struct{}
	done     chan struct{}
	closed   bool
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

// New returns a Reporter writing to w.
func New(w io.Writer, o Options) *Reporter {
	r := &Reporter{w: w, mode: o.Mode, clock: o.Clock, interval: o.Interval}
	if r.clock == nil {
		r.clock = clock.RealClock{}
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
		r.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(200*time.Millisecond))
	case Plain:
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		// The ticker exists before New returns, so that every clock step
		// after it counts.
		go r.tick(r.clock.NewTicker(r.interval))
	}
	return r
}

// Mode returns the effective mode.
func (r *Reporter) Mode() Mode { return r.mode }

// Scenario tracks one scenario: trials and pods done, violations so far.
type Scenario struct {
	r          *Reporter
	name       string
	trials     int
	pods       int
	done       int
	podsDone   int
	violations int
	start      time.Time
	finished   bool
	bar        *mpb.Bar
}

// AddScenario registers a scenario with its number of trials and pods
// (pods over all trials; 0 if unknown).
func (r *Reporter) AddScenario(name string, trials, pods int) *Scenario {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &Scenario{r: r, name: name, trials: trials, pods: pods, start: r.clock.Now()}
	r.scen = append(r.scen, s)
	switch {
	case r.mode == Bars && trials <= 0:
		// Open-ended (soak): the total grows with the trials done.
		s.bar = r.p.AddBar(1,
			mpb.PrependDecorators(
				decor.Name(name, decor.WCSyncSpaceR),
				decor.Any(func(decor.Statistics) string { return s.doneText() }, decor.WCSyncWidth),
			),
			mpb.AppendDecorators(
				decor.Any(func(decor.Statistics) string { return s.stats() }, decor.WCSyncSpace),
				decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace),
			))
	case r.mode == Bars:
		s.bar = r.p.AddBar(int64(trials),
			mpb.PrependDecorators(
				decor.Name(name, decor.WCSyncSpaceR),
				decor.CountersNoUnit("%d/%d trials", decor.WCSyncWidth),
			),
			mpb.AppendDecorators(
				decor.Any(func(decor.Statistics) string { return s.stats() }, decor.WCSyncSpace),
				decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO, decor.WCSyncSpace), "done"),
			))
	case r.mode == Plain:
		if trials > 0 {
			fmt.Fprintf(r.w, "progress: %s: started, %d trials, %d pods\n", name, trials, pods)
		} else {
			fmt.Fprintf(r.w, "progress: %s: started, open-ended\n", name)
		}
	}
	return s
}

// stats renders "pods N/M, violations V" (the caller may hold r.mu or not:
// it reads fields under r.mu itself when called from mpb).
func (s *Scenario) stats() string {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return s.statsLocked()
}

func (s *Scenario) statsLocked() string {
	if s.pods <= 0 {
		return fmt.Sprintf("pods %d  violations %d", s.podsDone, s.violations)
	}
	return fmt.Sprintf("pods %d/%d  violations %d", s.podsDone, s.pods, s.violations)
}

func (s *Scenario) doneText() string {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return fmt.Sprintf("%d trials", s.done)
}

// TrialDone records a finished trial.
func (s *Scenario) TrialDone(pods, violations int) {
	s.r.mu.Lock()
	s.done++
	s.podsDone += pods
	s.violations += violations
	bar, done, open := s.bar, s.done, s.trials <= 0
	s.r.mu.Unlock()
	if bar != nil {
		if open {
			bar.SetTotal(int64(done+1), false)
		}
		bar.Increment()
	}
}

// Done marks the scenario finished (also when it stopped early).
func (s *Scenario) Done() {
	s.r.mu.Lock()
	if s.finished {
		s.r.mu.Unlock()
		return
	}
	s.finished = true
	bar := s.bar
	if s.r.mode == Plain {
		if s.trials > 0 {
			fmt.Fprintf(s.r.w, "progress: %s: finished %d/%d trials, %s\n", s.name, s.done, s.trials, s.statsLocked())
		} else {
			fmt.Fprintf(s.r.w, "progress: %s: finished %d trials, %s\n", s.name, s.done, s.statsLocked())
		}
	}
	s.r.mu.Unlock()
	if bar != nil {
		switch {
		case s.trials <= 0:
			bar.SetTotal(int64(s.done), true)
		case s.done < s.trials:
			bar.Abort(false)
		default:
			bar.SetTotal(int64(s.trials), true)
		}
	}
}

// Logf prints a line (above the bars on a terminal).
func (r *Reporter) Logf(format string, args ...any) {
	if r.mode == Quiet {
		return
	}
	line := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	if r.p != nil {
		r.p.Write([]byte(line))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	io.WriteString(r.w, line)
}

func (r *Reporter) tick(t clock.Ticker) {
	defer close(r.done)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C():
			r.summary()
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
		if s.trials <= 0 {
			fmt.Fprintf(r.w, "progress: %s: %d trials, %s, elapsed %s\n", s.name, s.done, s.statsLocked(), r.clock.Now().Sub(s.start).Round(time.Second))
			continue
		}
		eta := "?"
		if s.done > 0 {
			el := r.clock.Now().Sub(s.start)
			rem := time.Duration(float64(el) / float64(s.done) * float64(s.trials-s.done))
			eta = rem.Round(time.Second).String()
		}
		fmt.Fprintf(r.w, "progress: %s: %d/%d trials, %s, eta %s\n", s.name, s.done, s.trials, s.statsLocked(), eta)
	}
}

// Close stops the reporter and waits for the bars to finish drawing.
func (r *Reporter) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	scen := append([]*Scenario(nil), r.scen...)
	r.mu.Unlock()
	for _, s := range scen {
		s.Done()
	}
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
	if r.p != nil {
		r.p.Wait()
	}
}
