package behavior

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestDefaultIsValidAndTame(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p := c.Draw(NewStream(1))
	want := Plan{
		StartLatency: 100 * time.Millisecond, ExitAfter: Never, Exit: ExitNone,
		TermHandling: 100 * time.Millisecond, LivenessFailAfter: Never,
	}
	if p != want {
		t.Errorf("default plan\n got %+v\nwant %+v", p, want)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Container)
		want   string // "" = valid
	}{
		{"default", func(*Container) {}, ""},
		{"exit code range", func(c *Container) { c.ExitCode = 256 }, "exitCode: exit code 256 is outside 0..255"},
		{"term code range", func(c *Container) { c.TermExitCode = -1 }, "termExitCode: exit code -1 is outside 0..255"},
		{"crash code zero", func(c *Container) { c.CrashMTBF = MustParse("1h"); c.CrashExitCode = 0 }, "crashExitCode: a crash must exit non-zero"},
		{"crash code zero without crashes", func(c *Container) { c.CrashExitCode = 0 }, ""},
		{"memory NaN", func(c *Container) { c.MemoryGrowth = math.NaN(); c.MemoryLimit = 1 }, "memoryGrowth: NaN bytes/s"},
		{"memory negative", func(c *Container) { c.MemoryGrowth = -1; c.MemoryLimit = 1 }, "memoryGrowth: -1 bytes/s"},
		{"limit negative", func(c *Container) { c.MemoryLimit = -5 }, "memoryLimit: -5 bytes"},
		{"growth without limit", func(c *Container) { c.MemoryGrowth = 1e6 }, "memoryGrowth: set memoryLimit too"},
		{"never starts", func(c *Container) { c.StartLatency = NeverDist() }, "startLatency: never"},
		{"two errors", func(c *Container) { c.ExitCode = 300; c.MemoryLimit = -1 }, "exitCode: exit code 300 is outside 0..255\nmemoryLimit"},
	}
	for _, tt := range tests {
		c := Default()
		tt.mutate(&c)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

func TestDrawExitDecision(t *testing.T) {
	const GiB = 1 << 30
	tests := []struct {
		name     string
		mutate   func(*Container)
		after    time.Duration
		code     int32
		reason   string
		cause    ExitCause
		meanOnly bool // random crash time: check the mean over many attempts
	}{
		{"server runs forever", func(*Container) {}, Never, 0, "", ExitNone, false},
		{"job completes", func(c *Container) { c.RunTime = Fixed(10 * time.Second) }, 10 * time.Second, 0, ReasonCompleted, ExitRunTime, false},
		{"job fails", func(c *Container) { c.RunTime = Fixed(10 * time.Second); c.ExitCode = 3 }, 10 * time.Second, 3, ReasonError, ExitRunTime, false},
		{"OOM before run time", func(c *Container) {
			c.RunTime = Fixed(10 * time.Second)
			c.MemoryGrowth, c.MemoryLimit = GiB, 5*GiB
		}, 5 * time.Second, OOMExitCode, ReasonOOMKilled, ExitOOM, false},
		{"run time before OOM", func(c *Container) {
			c.RunTime = Fixed(4 * time.Second)
			c.MemoryGrowth, c.MemoryLimit = GiB, 5*GiB
		}, 4 * time.Second, 0, ReasonCompleted, ExitRunTime, false},
		{"tie goes to run time", func(c *Container) {
			c.RunTime = Fixed(5 * time.Second)
			c.MemoryGrowth, c.MemoryLimit = GiB, 5*GiB
		}, 5 * time.Second, 0, ReasonCompleted, ExitRunTime, false},
		{"OOM of a server", func(c *Container) { c.MemoryGrowth, c.MemoryLimit = 1e6, 300e6 }, 300 * time.Second, OOMExitCode, ReasonOOMKilled, ExitOOM, false},
		{"crash before a long run", func(c *Container) {
			c.RunTime = Fixed(time.Hour)
			c.CrashMTBF = Fixed(time.Second)
		}, time.Second, 1, ReasonError, ExitCrash, true},
		{"crash code", func(c *Container) {
			c.CrashMTBF = Fixed(time.Second)
			c.CrashExitCode = 42
		}, time.Second, 42, ReasonError, ExitCrash, true},
		{"zero MTBF means no crashes", func(c *Container) { c.CrashMTBF = Fixed(0) }, Never, 0, "", ExitNone, false},
	}
	for _, tt := range tests {
		c := Default()
		tt.mutate(&c)
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		const n = 20000
		var sum float64
		for i := range n {
			p := c.Draw(ContainerKey(7, "ns/p", tt.name, uint32(i)).Rand())
			if p.ExitCode != tt.code || p.ExitReason != tt.reason || p.Exit != tt.cause {
				t.Fatalf("%s: got exit %d %q (%v), want %d %q (%v)", tt.name, p.ExitCode, p.ExitReason, p.Exit, tt.code, tt.reason, tt.cause)
			}
			if !tt.meanOnly {
				if p.ExitAfter != tt.after {
					t.Fatalf("%s: ExitAfter %v, want %v", tt.name, p.ExitAfter, tt.after)
				}
				break
			}
			sum += float64(p.ExitAfter)
		}
		if tt.meanOnly {
			if mean := sum / n; math.Abs(mean-float64(tt.after))/float64(tt.after) > 0.03 {
				t.Errorf("%s: mean time to crash %v, want %v", tt.name, time.Duration(mean), tt.after)
			}
		}
	}
}

func TestDrawDeterministicAndIndependent(t *testing.T) {
	c := Default()
	c.StartLatency = MustParse("lognormal(median=300ms, p99=2s)")
	c.ReadyAfter = MustParse("uniform(1s, 5s)")
	c.RunTime = MustParse("exponential(mean=1m)")

	a1 := c.Draw(ContainerKey(42, "default/web-0", "proxy", 0).Rand())
	a2 := c.Draw(ContainerKey(42, "default/web-0", "proxy", 0).Rand())
	if a1 != a2 {
		t.Fatalf("same key, different plans:\n%+v\n%+v", a1, a2)
	}
	for _, other := range []StreamKey{
		ContainerKey(43, "default/web-0", "proxy", 0),
		ContainerKey(42, "default/web-1", "proxy", 0),
		ContainerKey(42, "default/web-0", "app", 0),
		ContainerKey(42, "default/web-0", "proxy", 1),
	} {
		if b := c.Draw(other.Rand()); b.StartLatency == a1.StartLatency || b.ReadyAfter == a1.ReadyAfter {
			t.Errorf("key %v gives the same draws as the base key", other)
		}
	}

	// Changing one field's distribution leaves the other fields' draws alone.
	c2 := c
	c2.StartLatency = Fixed(time.Second)
	c2.CrashMTBF = MustParse("normal(mean=1h, sd=10m)")
	b := c2.Draw(ContainerKey(42, "default/web-0", "proxy", 0).Rand())
	if b.ReadyAfter != a1.ReadyAfter || b.PreStop != a1.PreStop {
		t.Errorf("changing startLatency/crashMTBF moved other draws: %+v vs %+v", b, a1)
	}
}

// TestStreamsUncorrelated: the first draw of container "a" and of
// container "b" across 20k pods should be uncorrelated (|r| well below
// 4/sqrt(n) ≈ 0.028).
func TestStreamsUncorrelated(t *testing.T) {
	const n = 20000
	var sx, sy, sxx, syy, sxy float64
	for i := range n {
		pod := fmt.Sprintf("ns/pod-%d", i)
		x := ContainerKey(1, pod, "a", 0).Rand().Float64()
		y := ContainerKey(1, pod, "b", 0).Rand().Float64()
		sx, sy, sxx, syy, sxy = sx+x, sy+y, sxx+x*x, syy+y*y, sxy+x*y
	}
	cov := sxy/n - sx/n*sy/n
	r := cov / math.Sqrt((sxx/n-sx/n*sx/n)*(syy/n-sy/n*sy/n))
	if math.Abs(r) > 0.028 {
		t.Errorf("correlation between container streams %v", r)
	}
}

func TestStreamKeysAreUnambiguous(t *testing.T) {
	seen := map[StreamKey]string{}
	for name, k := range map[string]StreamKey{
		`"ab","c"`:   Seed(1).Str("ab").Str("c"),
		`"a","bc"`:   Seed(1).Str("a").Str("bc"),
		`"abc"`:      Seed(1).Str("abc"),
		`"",""`:      Seed(1).Str("").Str(""),
		`""`:         Seed(1).Str(""),
		`none`:       Seed(1),
		`seed 2`:     Seed(2),
		`uint 0`:     Seed(1).Uint(0),
		`uint 1`:     Seed(1).Uint(1),
		`str "\x00"`: Seed(1).Str("\x00"),
	} {
		if prev, dup := seen[k]; dup {
			t.Errorf("keys %s and %s collide", prev, name)
		}
		seen[k] = name
	}
	if NewStream(5, "x", "y").Uint64() != Seed(5).Str("x").Str("y").Rand().Uint64() {
		t.Error("NewStream differs from the StreamKey chain")
	}
}

// TestStreamGolden pins the stream derivation and the samplers: if this
// changes, every simulated history changes, which needs a deliberate
// -update and a note in the change.
func TestStreamGolden(t *testing.T) {
	var b strings.Builder
	for _, k := range []struct {
		seed           uint64
		pod, container string
		attempt        uint32
	}{{0, "", "", 0}, {42, "default/web-0", "proxy", 0}, {42, "default/web-0", "proxy", 1}, {42, "default/web-1", "proxy", 0}} {
		r := ContainerKey(k.seed, k.pod, k.container, k.attempt).Rand()
		fmt.Fprintf(&b, "seed=%d pod=%q c=%q attempt=%d: %#x %#x %#x\n", k.seed, k.pod, k.container, k.attempt, r.Uint64(), r.Uint64(), r.Uint64())
	}
	c := Container{
		StartLatency:      MustParse("lognormal(median=300ms, p99=2s)"),
		StartupAfter:      MustParse("uniform(1s, 3s)"),
		ReadyAfter:        MustParse("normal(mean=2s, sd=500ms)"),
		RunTime:           MustParse("exponential(mean=10m)"),
		TermHandling:      MustParse("uniform(0s, 2s)"),
		CrashMTBF:         MustParse("1h"),
		CrashExitCode:     2,
		MemoryGrowth:      1 << 20,
		MemoryLimit:       512 << 20,
		PostStart:         MustParse("50ms"),
		PreStop:           MustParse("exponential(mean=1s)"),
		LivenessFailAfter: MustParse("never"),
	}
	for attempt := range uint32(5) {
		p := c.Draw(ContainerKey(42, "default/web-0", "proxy", attempt).Rand())
		fmt.Fprintf(&b, "attempt %d: %v\n", attempt, p)
	}
	golden(t, "streams.golden", []byte(b.String()))
}

func TestContainerJSON(t *testing.T) {
	in := `{"startLatency":"uniform(100ms, 300ms)","startupAfter":"2s","readyAfter":"0s","runTime":"forever",
	"exitCode":0,"termHandling":"never","termExitCode":0,"crashMTBF":"exponential(mean=1h)","crashExitCode":1,
	"postStart":"0s","preStop":"5s","livenessFailAfter":"never","memoryGrowth":1048576,"memoryLimit":268435456}`
	var c Container
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.TermHandling != NeverDist() || c.StartupAfter != Fixed(2*time.Second) || c.timeToOOM() != 256*time.Second {
		t.Errorf("decoded %+v", c)
	}
	out, _ := json.Marshal(c)
	var back Container
	if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("round trip %s: %v", out, err)
	}
}

func TestDrawAllocs(t *testing.T) {
	c := Default()
	c.StartLatency = MustParse("lognormal(median=300ms, p99=2s)")
	c.CrashMTBF = MustParse("1h")
	var pcg rand.PCG
	r := rand.New(&pcg)
	var p Plan
	n := testing.AllocsPerRun(1000, func() {
		ContainerKey(1, "ns/pod", "app", 3).Reseed(&pcg)
		p = c.Draw(r)
	})
	if n != 0 {
		t.Errorf("Reseed+Draw allocates %v times", n)
	}
	_ = p
}

func BenchmarkDraw(b *testing.B) {
	c := Container{
		StartLatency:      MustParse("lognormal(median=300ms, p99=2s)"),
		StartupAfter:      MustParse("uniform(1s, 3s)"),
		ReadyAfter:        MustParse("normal(mean=2s, sd=500ms)"),
		RunTime:           MustParse("exponential(mean=10m)"),
		TermHandling:      MustParse("uniform(0s, 2s)"),
		CrashMTBF:         MustParse("1h"),
		CrashExitCode:     1,
		PreStop:           MustParse("exponential(mean=1s)"),
		LivenessFailAfter: NeverDist(),
	}
	var pcg rand.PCG
	r := rand.New(&pcg)
	b.ReportAllocs()
	var sink time.Duration
	for i := 0; b.Loop(); i++ {
		ContainerKey(1, "default/web-0", "proxy", uint32(i)).Reseed(&pcg)
		sink += c.Draw(r).ExitAfter
	}
	_ = sink
}

// TestNamedStreamKeys pins the trial's named streams to their derivation:
// changing one changes every history (and the cross-backend contract).
func TestNamedStreamKeys(t *testing.T) {
	if ArrivalKey(9, "web") != Seed(9).Str("arrival").Str("web") ||
		LifetimeKey(9, "default/web-0") != Seed(9).Str("default/web-0").Str("lifetime") ||
		FaultKey(9, "crash", 2) != Seed(9).Str("fault").Str("crash").Uint(2) ||
		FaultTargetKey(9, "crash", 2) != Seed(9).Str("fault").Str("crash").Uint(2).Str("targets") {
		t.Fatal("a named stream key changed its derivation")
	}
	if FaultKey(9, "crash", 2) == FaultTargetKey(9, "crash", 2) {
		t.Fatal("fault schedule and targets share a stream")
	}
}

// TestAttempts: an attempt overlay changes that run only, on top of the
// container's final behaviour; a bad overlay is an error naming it.
func TestAttempts(t *testing.T) {
	var c Container = Default()
	in := `{"runTime":"never","postStart":"100ms","attempts":[{"runTime":"1s","exitCode":3},{"postStartFails":true}]}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	p0, p1, p2 := c.ForAttempt(0).Draw(r), c.ForAttempt(1).Draw(r), c.ForAttempt(2).Draw(r)
	if p0.Exit != ExitRunTime || p0.ExitAfter != time.Second || p0.ExitCode != 3 || p0.PostStartFails {
		t.Errorf("attempt 0: %v", p0)
	}
	if p1.Exit != ExitNone || !p1.PostStartFails || p1.PostStart != 100*time.Millisecond {
		t.Errorf("attempt 1 (inherits postStart, fails it): %v", p1)
	}
	if p2.Exit != ExitNone || p2.PostStartFails {
		t.Errorf("attempt 2 behaves as the container: %v", p2)
	}
	// The JSON round trip keeps the overlays as written.
	out, _ := json.Marshal(c)
	var back Container
	if err := json.Unmarshal(out, &back); err != nil || back.Validate() != nil || back.ForAttempt(0).Draw(r).ExitCode != 3 {
		t.Errorf("round trip %s: %v", out, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"attempts":[{"exitCode":300}]}`, "attempts[0]: exitCode: exit code 300 is outside 0..255"},
		{`{"attempts":[{},{"runTme":"1s"}]}`, `attempts[1]: json: unknown field "runTme"`},
		{`{"attempts":[{"attempts":[{}]}]}`, "attempts[0]: an attempt overlay cannot have attempts of its own"},
		{`{"attempts":[3]}`, "an attempt overlay is an object of behaviour fields"},
	} {
		c := Default()
		err := json.Unmarshal([]byte(tc.in), &c)
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
	}
}
