package behavior

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Container is the behaviour of one container, as a scenario declares it.
// Times are measured from the process start (the container's Running
// event) unless noted. JSON/YAML field names are the lowerCamel forms.
type Container struct {
	// StartLatency is the time from the CRI StartContainer call to the
	// process running.
	StartLatency Dist `json:"startLatency"`
	// StartupAfter is when the startup probe first passes.
	StartupAfter Dist `json:"startupAfter"`
	// ReadyAfter is when the readiness probe first passes.
	ReadyAfter Dist `json:"readyAfter"`
	// RunTime is how long the process runs before exiting on its own with
	// ExitCode; never for servers.
	RunTime  Dist  `json:"runTime"`
	ExitCode int32 `json:"exitCode"`
	// TermHandling is the time from SIGTERM to exit with TermExitCode;
	// never means SIGTERM is ignored and the container waits for SIGKILL.
	TermHandling Dist  `json:"termHandling"`
	TermExitCode int32 `json:"termExitCode"`
	// CrashMTBF is the mean time between crashes (exit CrashExitCode).
	// Crashes are a Poisson process: the time to crash is exponential with
	// this mean. A distribution here varies the MTBF per attempt. Zero or
	// never: no crashes.
	CrashMTBF     Dist  `json:"crashMTBF"`
	CrashExitCode int32 `json:"crashExitCode"`
	// MemoryGrowth (bytes per second) and MemoryLimit (bytes) give the
	// time to OOM kill: MemoryLimit/MemoryGrowth. Either zero: no OOM.
	MemoryGrowth float64 `json:"memoryGrowth,omitempty"`
	MemoryLimit  int64   `json:"memoryLimit,omitempty"`
	// PostStart and PreStop are hook durations (never: the hook hangs).
	PostStart Dist `json:"postStart"`
	PreStop   Dist `json:"preStop"`
	// LivenessFailAfter is when the liveness probe starts failing (and
	// keeps failing); never by default.
	LivenessFailAfter Dist `json:"livenessFailAfter"`
	// PostStartFails and PreStopFails make the hook return an error after
	// its duration. A failed postStart makes the kubelet kill the
	// container (FailedPostStartHook); a failed preStop is only logged.
	PostStartFails bool `json:"postStartFails,omitempty"`
	PreStopFails   bool `json:"preStopFails,omitempty"`
	// Attempts overlays the behaviour of the first runs: Attempts[n]
	// applies to the container's attempt n (its CRI attempt, the restart
	// count), any subset of the fields above on top of the container's
	// behaviour. Later attempts behave as the container does. Example:
	// [{runTime: 1s, exitCode: 1}] fails the first run and not the others.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Attempt is one entry of Container.Attempts: the overlay as written
// (JSON), and the behaviour it resolves to once Resolve ran.
type Attempt struct {
	raw      json.RawMessage
	resolved *Container
}

// UnmarshalJSON keeps the overlay's JSON: it is applied on top of the
// container's final behaviour (after every other overlay), by Resolve.
func (a *Attempt) UnmarshalJSON(data []byte) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return fmt.Errorf("an attempt overlay is an object of behaviour fields: %w", err)
	}
	a.raw, a.resolved = append(json.RawMessage(nil), data...), nil
	return nil
}

// MarshalJSON writes the overlay as written.
func (a Attempt) MarshalJSON() ([]byte, error) {
	if len(a.raw) == 0 {
		return []byte("{}"), nil
	}
	return a.raw, nil
}

// NewAttempt returns an overlay from its JSON ({"runTime":"1s"}).
func NewAttempt(js string) (Attempt, error) {
	var a Attempt
	err := a.UnmarshalJSON([]byte(js))
	return a, err
}

// Resolve computes the behaviour of every attempt overlay: c (without its
// overlays) with the overlay applied. It reports an overlay that does not
// decode or does not validate, naming it attempts[n].
func (c *Container) Resolve() error {
	if len(c.Attempts) == 0 {
		return nil
	}
	out := make([]Attempt, len(c.Attempts))
	for n := range c.Attempts {
		r, err := c.resolveAttempt(n)
		if err != nil {
			return err
		}
		out[n] = Attempt{raw: c.Attempts[n].raw, resolved: r}
	}
	c.Attempts = out
	return nil
}

func (c *Container) resolveAttempt(n int) (*Container, error) {
	x := *c
	x.Attempts = nil
	dec := json.NewDecoder(bytesReader(c.Attempts[n].raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("attempts[%d]: %w", n, err)
	}
	if x.Attempts != nil {
		return nil, fmt.Errorf("attempts[%d]: an attempt overlay cannot have attempts of its own", n)
	}
	if err := x.validateOwn(); err != nil {
		return nil, fmt.Errorf("attempts[%d]: %w", n, err)
	}
	return &x, nil
}

// ForAttempt returns the behaviour of the container's attempt n: its
// overlay's when it has one, else c. Resolve (or Validate) computes the
// overlays once; an unresolved overlay is resolved here (allocating).
func (c *Container) ForAttempt(n uint32) *Container {
	if uint64(n) >= uint64(len(c.Attempts)) {
		return c
	}
	if r := c.Attempts[n].resolved; r != nil {
		return r
	}
	if r, err := c.resolveAttempt(int(n)); err == nil {
		return r
	}
	return c
}

// Default returns a well-behaved server: starts in 100ms, is started and
// ready at once, runs until told to stop, exits 0 100ms after SIGTERM,
// never crashes, has instant hooks and a liveness that never fails.
func Default() Container {
	return Container{
		StartLatency:      Fixed(100 * time.Millisecond),
		RunTime:           NeverDist(),
		TermHandling:      Fixed(100 * time.Millisecond),
		CrashMTBF:         NeverDist(),
		CrashExitCode:     1,
		LivenessFailAfter: NeverDist(),
	}
}

// Exit codes and reasons as the kubelet reports them.
const (
	ReasonCompleted = "Completed" // exit code 0
	ReasonError     = "Error"     // any other code
	ReasonOOMKilled = "OOMKilled"
	// OOMExitCode is 128+SIGKILL, what the runtime reports for an OOM kill.
	OOMExitCode int32 = 137
)

// ReasonFor returns the reason the kubelet reports for a plain exit with
// code: Completed for 0, Error otherwise.
func ReasonFor(code int32) string {
	if code == 0 {
		return ReasonCompleted
	}
	return ReasonError
}

// Validate checks c and its attempt overlays, naming the offending fields
// (JSON names), and resolves the overlays (Resolve).
func (c *Container) Validate() error {
	if err := c.validateOwn(); err != nil {
		return err
	}
	return c.Resolve()
}

func (c *Container) validateOwn() error {
	var errs []error
	code := func(name string, v int32) {
		if v < 0 || v > 255 {
			errs = append(errs, fmt.Errorf("%s: exit code %d is outside 0..255", name, v))
		}
	}
	code("exitCode", c.ExitCode)
	code("termExitCode", c.TermExitCode)
	code("crashExitCode", c.CrashExitCode)
	if c.CrashExitCode == 0 && c.crashes() {
		errs = append(errs, errors.New("crashExitCode: a crash must exit non-zero (0 would be a normal completion; use runTime)"))
	}
	if math.IsNaN(c.MemoryGrowth) || math.IsInf(c.MemoryGrowth, 0) || c.MemoryGrowth < 0 {
		errs = append(errs, fmt.Errorf("memoryGrowth: %v bytes/s must be a finite non-negative number", c.MemoryGrowth))
	}
	if c.MemoryLimit < 0 {
		errs = append(errs, fmt.Errorf("memoryLimit: %d bytes must not be negative", c.MemoryLimit))
	}
	if c.MemoryGrowth > 0 && c.MemoryLimit == 0 {
		errs = append(errs, errors.New("memoryGrowth: set memoryLimit too, or the container never OOMs"))
	}
	if c.StartLatency.IsNever() {
		errs = append(errs, errors.New("startLatency: never would leave the container Waiting forever; model a stuck start with a long duration"))
	}
	return errors.Join(errs...)
}

func (c *Container) crashes() bool {
	return !c.CrashMTBF.IsNever() && !c.CrashMTBF.IsZero()
}

// timeToOOM returns when memory reaches the limit, or Never.
func (c *Container) timeToOOM() time.Duration {
	if c.MemoryGrowth <= 0 || c.MemoryLimit <= 0 {
		return Never
	}
	return toDuration(float64(c.MemoryLimit) / c.MemoryGrowth * float64(time.Second))
}

// ExitCause says why a Plan's process exits on its own.
type ExitCause uint8

const (
	ExitNone    ExitCause = iota // runs until stopped
	ExitRunTime                  // RunTime elapsed: ExitCode
	ExitCrash                    // crashed: CrashExitCode
	ExitOOM                      // memory hit the limit: 137 OOMKilled
)

func (c ExitCause) String() string {
	switch c {
	case ExitNone:
		return "none"
	case ExitRunTime:
		return "run-time"
	case ExitCrash:
		return "crash"
	case ExitOOM:
		return "oom"
	}
	return fmt.Sprintf("ExitCause(%d)", uint8(c))
}

// Plan is one attempt's concrete behaviour: every distribution of a
// Container drawn once. Times are from process start except StartLatency;
// Never means "does not happen".
type Plan struct {
	StartLatency time.Duration
	StartupAfter time.Duration
	ReadyAfter   time.Duration
	// ExitAfter is when the process exits on its own (the earliest of run
	// time, crash and OOM), with ExitCode and ExitReason; Never if none.
	ExitAfter  time.Duration
	ExitCode   int32
	ExitReason string
	Exit       ExitCause
	// TermHandling is the time from SIGTERM to exit with TermExitCode;
	// Never: SIGTERM is ignored.
	TermHandling      time.Duration
	TermExitCode      int32
	PostStart         time.Duration
	PreStop           time.Duration
	LivenessFailAfter time.Duration
	// PostStartFails and PreStopFails: the hook returns an error when it
	// ends.
	PostStartFails, PreStopFails bool
}

// Draw samples one attempt's Plan from r. It draws a fixed number of
// values in a fixed order whatever c holds (one per Dist, two for the
// crash time), so a stream's draws for one field do not depend on the
// other fields. It does not allocate.
//
// Ties between exit causes go to the run-time exit, then the crash: a
// natural exit is the least surprising explanation.
func (c *Container) Draw(r *rand.Rand) Plan {
	p := Plan{
		StartLatency:      c.StartLatency.Sample(r),
		StartupAfter:      c.StartupAfter.Sample(r),
		ReadyAfter:        c.ReadyAfter.Sample(r),
		TermHandling:      c.TermHandling.Sample(r),
		PostStart:         c.PostStart.Sample(r),
		PreStop:           c.PreStop.Sample(r),
		LivenessFailAfter: c.LivenessFailAfter.Sample(r),
		TermExitCode:      c.TermExitCode,
		ExitAfter:         Never,
		PostStartFails:    c.PostStartFails,
		PreStopFails:      c.PreStopFails,
	}
	run := c.RunTime.Sample(r)
	mtbf := c.CrashMTBF.Sample(r)
	crashU := unit(r) // drawn even without crashes, to keep the draw count fixed
	crash := Never
	if c.crashes() && mtbf != Never && mtbf > 0 {
		crash = toDuration(-float64(mtbf) * math.Log1p(-crashU)) // exponential with mean mtbf
	}
	oom := c.timeToOOM()

	if run != Never {
		p.ExitAfter, p.ExitCode, p.ExitReason, p.Exit = run, c.ExitCode, ReasonFor(c.ExitCode), ExitRunTime
	}
	if crash < p.ExitAfter {
		p.ExitAfter, p.ExitCode, p.ExitReason, p.Exit = crash, c.CrashExitCode, ReasonFor(c.CrashExitCode), ExitCrash
	}
	if oom < p.ExitAfter {
		p.ExitAfter, p.ExitCode, p.ExitReason, p.Exit = oom, OOMExitCode, ReasonOOMKilled, ExitOOM
	}
	return p
}

// String formats p on one line, writing never for Never (logs, goldens).
func (p Plan) String() string {
	d := func(v time.Duration) string {
		if v == Never {
			return "never"
		}
		return v.String()
	}
	exit := "exit=never"
	if p.Exit != ExitNone {
		exit = fmt.Sprintf("exit=%s(%s code=%d %s)", d(p.ExitAfter), p.Exit, p.ExitCode, p.ExitReason)
	}
	fails := func(b bool) string {
		if b {
			return "(fails)"
		}
		return ""
	}
	return fmt.Sprintf("start=%s startup=%s ready=%s %s term=%s(code=%d) postStart=%s%s preStop=%s%s livenessFail=%s",
		d(p.StartLatency), d(p.StartupAfter), d(p.ReadyAfter), exit, d(p.TermHandling), p.TermExitCode,
		d(p.PostStart), fails(p.PostStartFails), d(p.PreStop), fails(p.PreStopFails), d(p.LivenessFailAfter))
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
