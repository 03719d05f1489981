package check

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// The worker skips a checker on a pod whose features (Pod.feat) share
// nothing with its precondition (inv.needs). That must change nothing:
// the differential tests here check every pod both ways, gated and with
// every checker run (Ungated), and require identical results: findings
// (message, class, excuse, fault, excerpt), unknown bits and errors.
// The corpus is every pod history the package's tests build (recorded by
// the DSL and the check helpers, diffed in TestMain once the tests
// passed), the committed histories, scripts and fuzz corpus, and random
// mutations of all of them (TestGatingChangesNothing). internal/integration
// does the same on the sim's histories of every shipped scenario.

// gatingDiff checks one pod both ways and describes the first difference,
// "" if none.
func gatingDiff(meta *history.Meta, name string, ev []history.Event) string {
	coverGates(meta, name, ev)
	var gated, all podResult
	gatedWorker.Lock()
	gatedWorker.w.check(meta, name, ev, &gated)
	gatedWorker.Unlock()
	(&worker{checkers: registry, cap: 1 << 30, ungated: true}).check(meta, name, ev, &all)
	normalizeErrs(&gated)
	normalizeErrs(&all)
	if reflect.DeepEqual(gated, all) {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s: gated and ungated results differ (unknown %#x vs %#x, %d vs %d findings, errors %v vs %v)",
		name, gated.unknown, all.unknown, len(gated.findings), len(all.findings), gated.errs, all.errs)
	// Name the culprits: checkers gated off that report or panic.
	if p, err := BuildPod(meta, name, ev); err == nil {
		for _, ch := range registry {
			c := ch.(*inv)
			if c.needs == 0 || p.has(c.needs) {
				continue
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						fmt.Fprintf(&b, "\n  %s is gated off (features %#x, needs %#x) but panics: %v", c.id, p.feat, c.needs, r)
					}
				}()
				for _, h := range c.fn(p, nil) {
					fmt.Fprintf(&b, "\n  %s is gated off (features %#x, needs %#x) but reports: %s", c.id, p.feat, c.needs, h.Msg)
				}
			}()
		}
	}
	return b.String()
}

// gateCover records, per gated checker, the bits of its precondition that
// some history showed necessary: the checker reported with that bit the
// only one of its precondition the pod had. A bit never seen so is one
// the differential tests would not miss if it were dropped.
var gateCover = map[string]feature{}

func coverGates(meta *history.Meta, name string, ev []history.Event) {
	p, err := BuildPod(meta, name, ev)
	if err != nil {
		return
	}
	for _, ch := range registry {
		c := ch.(*inv)
		if m := p.feat & c.needs; m == 0 || m&(m-1) != 0 || gateCover[c.id]&m != 0 {
			continue
		}
		func() {
			defer func() { recover() }()
			if len(c.fn(p, nil)) > 0 {
				gateCover[c.id] |= p.feat & c.needs
			}
		}()
	}
}

// uncovered lists the precondition bits no history showed necessary.
func uncovered() []string {
	names := featureNames()
	var out []string
	for _, ch := range registry {
		c := ch.(*inv)
		for b, name := range names {
			if f := feature(1) << b; c.needs&f != 0 && gateCover[c.id]&f == 0 {
				out = append(out, c.id+" "+name)
			}
		}
	}
	return out
}

// featureNames are the names of the features, bit by bit, read from
// pod.go's declaration (for messages; bit numbers if it cannot be read).
func featureNames() []string {
	var names []string
	f, err := parser.ParseFile(token.NewFileSet(), "pod.go", nil, 0)
	if err != nil {
		for b := range 64 {
			names = append(names, fmt.Sprintf("bit %d", b))
		}
		return names
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if d, ok := n.(*ast.GenDecl); ok && d.Tok == token.CONST && len(d.Specs) > 0 {
			if v, ok := d.Specs[0].(*ast.ValueSpec); ok && v.Type != nil && fmt.Sprint(v.Type) == "feature" {
				for _, sp := range d.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						names = append(names, id.Name)
					}
				}
			}
		}
		return true
	})
	return names
}

// gatedWorker checks every pod gatingDiff gets, one after another as a
// Runner's worker does: its plan cache (worker.plans) sees every feature
// set of the corpus, in turn.
var gatedWorker = struct {
	sync.Mutex
	w worker
}{w: worker{checkers: registry, cap: 1 << 30}}

// normalizeErrs keeps the first line of each error: the stack below it
// holds addresses.
func normalizeErrs(res *podResult) {
	for i := range res.errs {
		res.errs[i].Err, _, _ = strings.Cut(res.errs[i].Err, "\n")
	}
}

// recorded collects the pod histories the tests build and check.
var recorded struct {
	sync.Mutex
	pods []recordedPod
}

type recordedPod struct {
	meta *history.Meta // nil: built by the DSL, checked under gatingMetas
	ev   []history.Event
}

// record keeps a copy of a history a test built or checked, for TestMain.
func record(meta *history.Meta, ev []history.Event) {
	recorded.Lock()
	recorded.pods = append(recorded.pods, recordedPod{meta, slices.Clone(ev)})
	recorded.Unlock()
}

// gatingMetas are the runs a history of unknown run is checked in: the
// tolerance and the policy's gates change what the checkers decide.
var gatingMetas = []*history.Meta{
	testMeta,
	{Scenario: "gating", Policy: "kep753+ContainerRestartRules+RestartAllContainersOnContainerExits+SidecarsRestartableDuringPodTermination", Backend: "sim"},
	{Scenario: "gating", Policy: "kep753", Backend: "kube", ToleranceNanos: 1e9},
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if msg := checkRecorded(); msg != "" {
			fmt.Fprint(os.Stderr, msg)
			code = 1
		}
	}
	os.Exit(code)
}

// checkRecorded runs once every test passed: the gating's differential
// test on the histories the tests built, and 4 random mutations of each;
// then, after a full run, it requires each bit of each precondition to
// have been necessary on some history, or dropping it would go unnoticed.
// It returns a failure message, "" if none.
func checkRecorded() string {
	recorded.Lock()
	pods := recorded.pods
	recorded.Unlock()
	n, mutants := 0, 4
	if testing.Short() {
		mutants = 0
	}
	rng := rand.New(rand.NewPCG(19, 20))
	for _, r := range pods {
		metas := gatingMetas
		if r.meta != nil {
			metas = []*history.Meta{r.meta}
		}
		for _, meta := range metas {
			ev := r.ev
			for k := range 1 + mutants {
				if k > 0 {
					ev = slices.Clone(r.ev)
					for range 1 + rng.IntN(4) {
						ev = mutateEvents(rng, ev)
					}
				}
				n++
				if d := gatingDiff(meta, podName(ev), ev); d != "" {
					return fmt.Sprintf("--- FAIL: TestMain (gating on the histories the tests built)\n    %s\nhistory:\n%sFAIL\n", d, dumpEvents(ev))
				}
			}
		}
	}
	if testing.Verbose() {
		fmt.Printf("gating: %d pod checks of the tests' histories identical gated and ungated\n", n)
	}
	if flag.Lookup("test.run").Value.String() != "" || testing.Short() {
		return "" // not every test ran
	}
	if miss := uncovered(); len(miss) > 0 {
		return fmt.Sprintf("--- FAIL: TestMain (gating)\n    precondition bits no history shows necessary (add one on which the checker reports with that feature alone): %v\nFAIL\n", miss)
	}
	return ""
}

func podName(ev []history.Event) string {
	for i := range ev {
		if ev[i].Pod != "" {
			return ev[i].Pod
		}
	}
	return "default/unnamed"
}

// gatingCorpus returns the committed histories, split into pods: the
// golden JSONL files, the malformed ones, the fuzz corpus.
func gatingCorpus(t *testing.T) []recordedPod {
	t.Helper()
	var files [][]byte
	paths, _ := filepath.Glob("testdata/*.jsonl")
	more, _ := filepath.Glob("testdata/malformed/*.jsonl")
	for _, p := range append(paths, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
	}
	fuzz, _ := filepath.Glob("testdata/fuzz/FuzzCheck/*")
	if len(fuzz) == 0 {
		t.Fatal("no fuzz corpus")
	}
	for _, p := range fuzz {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// "go test fuzz v1" then one []byte("...") literal.
		_, lit, _ := strings.Cut(string(b), "\n")
		lit = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lit), "[]byte("), ")")
		data, err := strconv.Unquote(lit)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		files = append(files, []byte(data))
	}
	var out []recordedPod
	for _, data := range files {
		// Malformed input stops at its error: the pods before it count.
		_ = forEachPod(history.NewReader(bytes.NewReader(data)), func(*history.Meta) error { return nil },
			func(meta *history.Meta, _ string, evs []history.Event) error {
				out = append(out, recordedPod{meta, slices.Clone(evs)})
				return nil
			})
	}
	return out
}

// TestGatingChangesNothing checks the committed histories, the scripts,
// the golden pods and random mutations of all of them gated and ungated.
func TestGatingChangesNothing(t *testing.T) {
	corpus := gatingCorpus(t)
	scripts, _ := filepath.Glob(filepath.Join("testdata", "scripts", "*.txt"))
	for _, file := range scripts {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		script, _, _ := bytes.Cut(data, []byte("----\n"))
		h, meta, err := parseScript(string(script))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		corpus = append(corpus, recordedPod{meta, h.events()})
	}
	for _, h := range []*hb{realistic(), design2019(), designNone(), jobDone(0), jobDone(1)} {
		corpus = append(corpus, recordedPod{nil, h.events()})
	}
	corpus = append(corpus, recordedPod{nil, typical()}, recordedPod{localMeta, gatingStartupKill()}, recordedPod{nil, gatingOOMPreStop()},
		recordedPod{nil, gatingProbeKillInKill()}, recordedPod{nil, gatingFailedHookStarted()})
	n := 0
	check := func(r recordedPod) {
		t.Helper()
		metas := gatingMetas
		if r.meta != nil {
			metas = []*history.Meta{r.meta}
		}
		for _, meta := range metas {
			n++
			if d := gatingDiff(meta, podName(r.ev), r.ev); d != "" {
				t.Fatalf("%s\nhistory:\n%s", d, dumpEvents(r.ev))
			}
		}
	}
	for _, r := range corpus {
		check(r)
	}
	// Random mutations: events dropped, repeated, moved, given other
	// kinds, containers, reasons, codes and values, outages, faults and
	// kills inserted. Most are histories no backend writes; the gating
	// must hold on them all the same.
	rng := rand.New(rand.NewPCG(19, 54))
	rounds := 400
	if testing.Short() {
		rounds = 5
	}
	for _, r := range corpus {
		for range rounds {
			ev := slices.Clone(r.ev)
			for range 1 + rng.IntN(4) {
				ev = mutateEvents(rng, ev)
			}
			check(recordedPod{r.meta, ev})
		}
	}
	t.Logf("%d pod checks identical gated and ungated (%d histories, %d mutants each)", n, len(corpus), rounds)
}

func dumpEvents(ev []history.Event) string {
	var b strings.Builder
	for i := range ev {
		e := &ev[i]
		fmt.Fprintf(&b, "  %d t=%d %s c=%q reason=%q code=%d value=%v probe=%s/%s cond=%s fault=%s#%d\n",
			i, e.T, e.Kind, e.Container, e.Reason, e.Code, e.Value, e.Probe, e.Result, e.Cond, e.Fault, e.FaultID)
	}
	return b.String()
}

// mutateEvents applies one random edit to a pod history.
func mutateEvents(rng *rand.Rand, ev []history.Event) []history.Event {
	if len(ev) == 0 {
		return ev
	}
	var names []string
	for i := range ev {
		if ev[i].Kind == history.PodCreated && ev[i].Spec != nil {
			for _, cs := range [2][]history.ContainerSpec{ev[i].Spec.Init, ev[i].Spec.Main} {
				for k := range cs {
					names = append(names, cs[k].Name)
				}
			}
			break
		}
	}
	names = append(names, "ghost")
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	i := rng.IntN(len(ev))
	e := ev[i]
	switch rng.IntN(13) {
	case 0: // drop
		return slices.Delete(ev, i, i+1)
	case 1: // repeat
		return slices.Insert(ev, i, e)
	case 2: // move elsewhere, taking the time of its new place
		j := rng.IntN(len(ev))
		ev = slices.Delete(ev, i, i+1)
		j = min(j, len(ev))
		if j < len(ev) {
			e.T = ev[j].T
		}
		return slices.Insert(ev, j, e)
	case 3: // another container kind
		e.Kind = history.ContainerStartRequested + history.Kind(rng.IntN(int(history.ProbeResult-history.ContainerStartRequested+1)))
		if e.Container == "" {
			e.Container = pick(names...)
		}
	case 4:
		e.Container = pick(names...)
	case 5:
		e.Reason = pick("", "LivenessProbe", "StartupProbe", "UnknownState", "OOMKilled", "PodDeleted", "PodCompleted",
			"NodeShutdown", "SandboxLost", "InitFailed", "RestartAllContainers", "ResizeRestart", "SpecChanged", "FailedPostStartHook", "Error", "Completed", "Terminated")
	case 6:
		e.Code = []int32{0, 1, 2, 42, 88, 137, 143, 255}[rng.IntN(8)]
		e.Value = !e.Value
	case 7:
		e.Probe, e.Result = pick("startup", "readiness", "liveness"), pick("success", "failure")
		if rng.IntN(2) == 0 {
			e.Kind = history.ProbeResult
		}
	case 8: // a node-level event or a fault
		k := pick("kd", "ku", "rd", "ru", "nd", "nu", "ns", "fb", "fe", "fn")
		n := history.Event{T: e.T, Node: e.Node, Grace: int64(rng.IntN(40)) * 1e9, CritGrace: int64(rng.IntN(10)) * 1e9}
		n.Kind = map[string]history.Kind{"kd": history.KubeletDown, "ku": history.KubeletUp, "rd": history.RuntimeDown, "ru": history.RuntimeUp,
			"nd": history.NodeDown, "nu": history.NodeUp, "ns": history.NodeShutdown, "fb": history.FaultBegin, "fe": history.FaultEnd, "fn": history.FaultNotApplied}[k]
		n.Fault = pick("kubelet-crash", "runtime-restart", "node-poweroff", "oom-kill", "container-gc", "container-kill", "node-shutdown")
		n.FaultID = uint32(rng.IntN(3))
		n.Container = pick(names...)
		return slices.Insert(ev, i, n)
	case 9: // a kill, a reset, a new sandbox, a phase
		n := history.Event{T: e.T, Pod: e.Pod, Node: e.Node, Grace: int64(rng.IntN(31)) * 1e9, Value: rng.IntN(2) == 0}
		switch rng.IntN(6) {
		case 0:
			n.Kind, n.Reason = history.PodTerminating, pick("PodDeleted", "PodCompleted", "NodeShutdown", "SandboxLost", "InitFailed", "RestartAllContainers")
		case 1:
			n.Kind, n.Cond, n.Value = history.PodCondition, "AllContainersRestarting", true
		case 2:
			n.Kind = pick2(rng, history.SandboxCreated, history.SandboxLost, history.SandboxStopped)
		case 3:
			n.Kind, n.Phase = history.PodPhase, pick("Pending", "Running", "Succeeded", "Failed")
		case 4:
			n.Kind, n.Cond = history.PodCondition, pick("Initialized", "ContainersReady", "Ready")
		default:
			n.Kind = pick2(rng, history.PodDeleted, history.PodRemoved, history.PodScheduled)
			n.CPU, n.Mem = int64(rng.IntN(3))*100, int64(rng.IntN(3))<<20
		}
		return slices.Insert(ev, i, n)
	case 10: // a container event, of any kind, anywhere
		n := history.Event{T: e.T, Pod: e.Pod, Node: e.Node, Container: pick(names...), Grace: int64(rng.IntN(31)) * 1e9}
		n.Kind = history.ContainerStartRequested + history.Kind(rng.IntN(int(history.ProbeResult-history.ContainerStartRequested+1)))
		n.Reason = pick("", "", "LivenessProbe", "StartupProbe", "UnknownState", "OOMKilled", "PodDeleted", "Error", "Completed")
		n.Code = []int32{0, 1, 137}[rng.IntN(3)]
		n.Value = rng.IntN(3) > 0
		n.Probe, n.Result = pick("startup", "readiness", "liveness"), pick("success", "failure")
		return slices.Insert(ev, i, n)
	case 11: // resources: oom_score_adj, exclusive CPUs, a resize
		e.OOMScoreAdj = []int32{0, -997, 1000, 500, 2}[rng.IntN(5)]
		e.CPUs = pick("", "0-1", "1", "2-3,5")
		e.CPU, e.Mem = int64(rng.IntN(3))*100, int64(rng.IntN(3))<<20
		if rng.IntN(3) == 0 {
			e.Kind = pick2(rng, history.ContainerResize, history.ContainerResized, history.ContainerImageChanged, history.ContainerStartFailed, history.ContainerRemoved)
		}
	default: // shift in time
		e.T += int64(rng.IntN(20_000)-10_000) * 1e6
	}
	ev[i] = e
	return ev
}

func pick2[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

// gatingStartupKill: a backend that records no kill reasons (local) stops
// a main whose startup probe failed, with a grace the probe's budget does
// not give. Its only INV-P5 feature is the failed probe (fProbeFail): the
// kill reason is the failure's.
func gatingStartupKill() []history.Event {
	spec := specOf("Always", 30, "sidecar:proxy", "main:app+startup")
	spec.Main[0].StartupSpec = &history.ProbeSpec{Period: 1e9, Success: 1, Failure: 1, Grace: 5e9}
	h := newPod("startup-kill", spec)
	h.at(0).created().at(5).scheduled().at(10).sandbox().at(20).up("proxy").at(30).req("app").running("app")
	h.at(1000).probe("app", "startup", "failure").at(1010).stop("app", 20, "").at(1500).exited("app", 137)
	return h.events()
}

// gatingOOMPreStop: a preStop after an OOM kill, in a pod without hooks:
// its only INV-H1 feature is the OOM kill (fOOM).
func gatingOOMPreStop() []history.Event {
	h := newPod("oom-prestop", specOf("Always", 30, "sidecar:proxy", "main:app"))
	h.at(0).created().at(5).scheduled().at(10).sandbox().at(20).up("proxy").at(30).up("app")
	h.at(1000).add(history.Event{Kind: history.ContainerExited, Container: "app", Code: 137, Reason: "OOMKilled"})
	return h.at(1100).prestop("app", "").events()
}

// gatingProbeKillInKill: a stop for a liveness probe during a pod kill,
// with no probe result in the kill: INV-P6's only feature is the stop's
// reason (fProbeReason).
func gatingProbeKillInKill() []history.Event {
	h := newPod("probe-kill-in-kill", specOf("Always", 30, "sidecar:proxy", "main:app+live"))
	h.at(0).created().at(5).scheduled().at(10).sandbox().at(20).up("proxy").at(30).up("app")
	h.at(5000).deleted(30).terminating("PodDeleted", 30).at(5100).stop("app", 30, "LivenessProbe").exited("app", 137)
	return h.at(5200).stopExit("proxy", 30, "PodDeleted").events()
}

// gatingFailedHookStarted: a main without postStart in its spec whose
// postStart failed and which was reported Started: INV-H1's only feature
// is the failed hook (fPostStartFailed).
func gatingFailedHookStarted() []history.Event {
	h := newPod("failed-hook-started", specOf("Always", 30, "sidecar:proxy", "main:app"))
	h.at(0).created().at(5).scheduled().at(10).sandbox().at(20).up("proxy").at(30).req("app").running("app")
	h.at(40).add(history.Event{Kind: history.ContainerPostStartDone, Container: "app", Value: false})
	return h.at(50).started("app", true).events()
}
