package sim

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/sidebench/sidebench/reference-impl/kubelet"

	"github.com/sidebench/sidebench/harness/arrival"
	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/history/hspec"
	"github.com/sidebench/sidebench/reference-impl/api"
)

type evKind uint8

const (
	evNone evKind = iota
	// control plane and nodes (slot = workload, fault or node index)
	evArrive
	evFault
	evKubeletUp
	evKubeletCrash
	evRuntimeUp
	evNodeUp
	evShutdownCritical
	evShutdownEnd
	// pod events (slot = pod slot, id = pod id); c = container
	evBind
	evWake
	evSandbox
	evRunning
	evExit
	evTermExit
	evKill
	evPostStart
	evPreStop
	evProbe
	evActionFailed
	evLifetime
	evDeliverDelete
	evAPIDelete
	evRemove
	evFaultPod
	evProbeFaultEnd
	evRemoved
	evResized
	evPullFailed
	evPullFaultEnd
	// the kubelet hears of an exit the runtime recorded inside a call
	// (StopPodSandbox's SIGKILLs)
	evExitSeen
	// wiring (wiring.go): container.serving, a wrapper's or hook's poll
	// (aux = poll kind), a quit signal reaching a sidecar
	evServing
	evWirePoll
	evQuit
)

// node is one simulated node: a kubelet (the machines of its pods), a
// runtime and a power state.
type node struct {
	name      string
	up        bool // powered and running
	kubeletUp bool
	runtimeUp bool
	// kubeletIdle: the kubelet started while its runtime was down and
	// syncs no pod until the runtime is back (syncLoop skips pod
	// synchronization while runtimeErrors reports the first runtime
	// status check not yet completed)
	kubeletIdle bool
	// generations: a timer event carries the generation it was armed in
	// and is dropped if the component went down or up since.
	kgen, rgen, ngen uint32
	// pods bound here, by slot (order is deterministic: binding order with
	// swap-removal).
	pods []int32
	// sbUnseen: pods whose sandbox changed while the runtime was down,
	// for the first relist after it is back (tellSandbox)
	sbUnseen []pendingPod
	// refusals: the refused calls of the node's pods whose report is
	// still on its way (failActionAfter), oldest first
	refusals []refusal
	// fault instances holding a component down (for fault.end), +1.
	kFault, rFault, nFault uint32
	kFaultIdx, rFaultIdx   uint16
	nFaultIdx              uint16
	recrashLeft            bool
	shuttingDown           bool
	critStarted            bool     // the shutdown reached its critical pods
	shutdownBudget         [2]int64 // regular, critical grace budgets
	shutdownReturn         bool
	// effective requests of the pods bound here (INV-Q1)
	usedCPU, usedMem int64
	// exclusive CPUs not given to a pod (static CPU manager, INV-Q5)
	freeCPUs kubelet.CPUSet
}

// probes is the prober's state of a container's three probes, indexed
// by api.ProbeKind: arrays rather than three structs, which would carry 6
// bytes of padding each (TestHotStateSizes).
type probes struct {
	last       [3]int64 // time of the last probe; 0 = none yet
	succ, fail [3]int32 // consecutive successes and failures
	result     [3]api.ProbeResult
	lastOK     [3]bool
}

// ctr is the sim state of one container of a pod: the runtime's process
// and the prober's view. Fields are ordered so that it packs without
// padding (a host keeps one per container of every pod alive).
type ctr struct {
	// hot: generations and flags first, then the record (same cache lines)
	gen         uint32 // process generation (start, exit, kill timers)
	hgen        uint32 // hook generation (postStart, preStop)
	pgen        uint32 // probe generation
	starting    bool   // created, process not yet running
	stopping    bool   // SIGTERM sent
	preStopOn   bool
	postStartOn bool
	startupOK   bool // startup probe succeeded (or none)
	// unseen: the record changed while the runtime was down, so the
	// kubelet's relist has not seen it yet (tellRecord)
	unseen bool
	// the attempt's drawn exit reason and hook failures: part of its
	// plan, kept here where they fill the flags' padding
	exitReason                   api.Reason
	postStartFails, preStopFails bool
	startedAt                    int64
	killAt                       int64
	rec                          api.ContainerRecord // the runtime's latest record

	plan  plan
	probe probes
}

// ctrFault is the fault state of one container, allocated only for pods a
// fault touched (it is cold: kept out of ctr to keep ctr small).
type ctrFault struct {
	// forced probe failures (probe-failure fault): until when, and the
	// fault instance (+1) waiting for its effect / with a window open.
	forcedUntil   [3]int64
	forcedFault   [3]uint32
	forcedFaultID [3]uint32
	forcedIdx     [3]uint16
	// imageFault is the image-change fault instance (+1) waiting for the
	// container to run the new image.
	imageFault    uint32
	imageFaultIdx uint16
	// image-pull-failure: pulls fail until pullUntil (api.Never: for
	// good); the instance (+1), whether a pull failed yet.
	pullUntil   int64
	pullFault   uint32
	pullIdx     uint16
	pullApplied bool
}

// plan is the part of an attempt's drawn behavior.Plan the runtime and
// the prober still need after the start (compact: it is per container;
// the exit reason and the hook failures are in ctr).
type plan struct {
	startupAfter, readyAfter, livenessFailAfter time.Duration
	termHandling, preStop, postStart, exitAfter time.Duration
	exitCode, termExitCode                      int32
}

// pod is one pod: API object, runtime state on its node, kubelet machine.
// It heads its slot (slots.go), followed by its machine's observed
// containers and its containers.
type pod struct {
	// hot: touched by almost every event (first cache lines)
	id   uint32 // unique in the run; 0 = free slot
	slot int32
	wl   int32
	node int32 // -1 = not scheduled
	// cs is the pod's containers: the slot's storage (slots.go), as long
	// as the spec.
	cs       []ctr
	spec     *api.PodSpec
	name     string
	nodeName string
	mgen     uint32 // bumped whenever the machine is replaced or dropped
	wgen     uint32 // wake timer generation
	wakeAt   int64  // armed wake time (api.Never = none)
	// hasM: the pod has a machine (m), its node's kubelet knows it
	hasM bool

	// key is the part of the pod's random streams common to all of them
	// (behavior.PodKey), computed once.
	key behavior.StreamKey

	// runtime
	sandbox   api.Sandbox
	sbGen     uint32
	sbAttempt uint32
	sbBusy    bool // a sandbox creation is in flight

	// API server view
	deleted     bool
	bindSeen    bool // the kubelet saw the binding
	deleteSeen  bool // the kubelet saw the deletion
	terminal    bool // a terminal phase was published
	kdone       bool // the kubelet finished the pod on this node
	removing    bool
	inited      bool           // first sandbox created (on-phase "initializing")
	ran         bool           // phase Running seen
	terminating bool           // pod.terminating seen
	termReason  api.KillReason // reason of the latest pod.terminating
	quitFile    bool           // a wrapper wrote the shared quit file (wiring.go)
	nidx        int32          // index in node.pods
	deleteGrace int64
	shutdown    int64 // node-shutdown grace given (0 = none)
	createdAt   int64
	status      api.PodStatus // last published status (the API server's copy)
	fx          []ctrFault    // nil unless a fault touched the pod
	wx          []ctrWire     // nil unless a workaround wires the pod (wiring.go)
	// exclusive CPUs of the static CPU manager: taken from the node, and
	// each container's (rendered once); nil without exclusive CPUs
	cpus     kubelet.CPUSet
	cpuSets  []kubelet.CPUSet
	cpuNames []string

	// m is the pod's kubelet machine while hasM (kubelet.Scratch.InitMachine
	// in the slot, its observed containers right after the pod): last, so
	// that the machine and what its planner reads are one range.
	m kubelet.Machine
}

// refusal is a refused runtime call whose report reaches the kubelet at
// due (the pod worker's back-off), unless a relist tells it first
// (relistPod); told says it was reported.
type refusal struct {
	due  int64
	slot int32
	id   uint32
	mgen uint32
	c    uint8
	k    api.ActionKind
	told bool
}

type wlState struct {
	cfg  *Workload
	spec *api.PodSpec // shared template (nil slices never mutated)
	// effective requests of its pods (INV-Q1) and each container's
	// oom_score_adj (INV-Q3), computed once for the template
	cpu, mem int64
	oom      []int32
	hspec    *history.PodSpec
	world    faults.Workload
	beh      []int // per container index: index into cfg.Behavior, -1 = default
	prefix   string
	created  int
	arrivals arrival.Process
	lifetime bool
	grace    int64
	// on-phase faults per lifecycle stage
	onPhase [4][]int
	// on-container faults (exact timing relative to a container event)
	onContainer []int
}

type faultState struct {
	match []bool // per workload: its pods match the pod selectors
	spec  *faults.Spec
	label string
	fired int
	// sched draws the firing times, pick the targets: two streams, so
	// that the schedule is the same on every backend whatever each
	// backend's pods and nodes let it pick (harness/trial's contract).
	sched, pick *rand.Rand
}

type engine struct {
	ctx  context.Context
	cfg  *Config
	seed uint64
	sink history.Sink
	// pf is sink's prefetch hook, if it has one (history.Prefetcher)
	pf history.Prefetcher
	// scratch is the working memory every machine shares: the sim
	// drives one machine at a time and collects its output before the next
	// (kubelet.Scratch), so no pod carries plan and output buffers.
	scratch kubelet.Scratch

	q       queue
	imm     []event
	immHead int
	now     int64

	nodes     []node
	slots     slotStore // the pods (slots.go)
	free      []int32
	nextID    uint32
	live      int
	pending   []pendingPod // pods waiting for a node (FIFO)
	pendHd    int
	rr        int // scheduling cursor
	lostNodes int // nodes down for good

	wls          []wlState
	arrivalsLeft int
	faults       []faultState
	nextFaultID  uint32
	activeFaults int // fault.begin without fault.end yet

	retryDelay int64
	res        Result
	ev         history.Event
	err        error

	relist    []api.ContainerRecord
	pcg       *rand.PCG
	rnd       *rand.Rand
	candidate []int32
	nameBuf   []byte

	// evPod/evC: the pod and container of the event being written when
	// emitC built it (on-container faults watch them); reset by write.
	evPod *pod
	evC   int
}

func newEngine(ctx context.Context, cfg *Config, seed uint64, sink history.Sink) *engine {
	e := &engine{ctx: ctx, cfg: cfg, seed: seed, sink: sink}
	e.pf, _ = sink.(history.Prefetcher)
	e.res.Seed = seed
	e.retryDelay = int64(cfg.Cluster.RetryDelay)
	if e.retryDelay == 0 {
		e.retryDelay = int64(DefaultRetryDelay)
	}
	e.pcg = rand.NewPCG(0, 0)
	e.rnd = rand.New(e.pcg)
	e.nodes = make([]node, cfg.Cluster.Nodes)
	for i := range e.nodes {
		n := &e.nodes[i]
		n.name = "node-" + strconv.Itoa(i)
		n.up, n.kubeletUp, n.runtimeUp = true, true, true
		if cfg.Cluster.CPUManagerStatic {
			n.freeCPUs = kubelet.CPUSet(1)<<uint(cfg.Cluster.NodeCPU/1000) - 1
		}
	}
	e.wls = make([]wlState, len(cfg.Workloads))
	total := 0
	for i := range cfg.Workloads {
		w := &cfg.Workloads[i]
		ws := &e.wls[i]
		ws.cfg = w
		ws.spec = &w.Spec
		ws.world = faults.WorldOf(w.Name, w.Labels, &w.Spec)
		ws.hspec = hspec.Of(w.Name, w.Labels, &w.Spec)
		ws.cpu, ws.mem = kubelet.EffectiveRequests(&w.Spec)
		ws.oom = make([]int32, w.Spec.Len())
		for c := range ws.oom {
			ws.oom[c] = kubelet.OOMScoreAdj(&w.Spec, c, e.memCapacity(), cfg.Gates)
		}
		ws.prefix = history.PodNamePrefix(w.Namespace, w.Name)
		ws.beh = make([]int, w.Spec.Len())
		for c := range ws.beh {
			ws.beh[c] = -1
			name := w.Spec.At(c).Name
			for j := range w.Behavior {
				if w.Behavior[j].Container == name {
					ws.beh[c] = j
				}
			}
		}
		ws.arrivals = arrival.New(w.Arrival, w.Count, behavior.ArrivalKey(seed, w.Name).Rand())
		ws.lifetime = !distIsZero(&w.Lifetime)
		ws.grace = int64(w.DeleteGrace)
		if ws.grace == 0 {
			ws.grace = int64(w.Spec.TerminationGracePeriod)
		}
		total += w.Count
	}
	e.arrivalsLeft = total
	e.faults = make([]faultState, len(cfg.Faults))
	for i := range cfg.Faults {
		f := &cfg.Faults[i]
		e.faults[i] = faultState{spec: f, label: f.Label(i), sched: behavior.FaultKey(seed, f.Label(i), i).Rand(),
			pick: behavior.FaultTargetKey(seed, f.Label(i), i).Rand()}
		e.faults[i].match = make([]bool, len(e.wls))
		for w := range e.wls {
			ws := &e.wls[w]
			if !f.Where.MatchPod(&ws.world) {
				continue
			}
			e.faults[i].match[w] = true
			if f.When.Kind == faults.OnPhase {
				ws.onPhase[f.When.Phase] = append(ws.onPhase[f.When.Phase], i)
			}
			if f.When.Kind == faults.OnContainer {
				ws.onContainer = append(ws.onContainer, i)
			}
		}
	}
	k := 1
	for i := range cfg.Workloads {
		k = max(k, cfg.Workloads[i].Spec.Len())
	}
	e.slots = newSlotStore(k)
	return e
}

// start arms the first arrival of every workload and the first firing of
// every timed fault.
func (e *engine) start() {
	for i := range e.wls {
		w := e.wls[i].cfg
		if w.Count == 0 {
			continue
		}
		if at, ok := e.wls[i].arrivals.Peek(); ok {
			e.push(event{t: int64(at), evWho: evWho{slot: int32(i)}, evWhat: evWhat{kind: evArrive}})
		}
	}
	for i := range e.faults {
		f := &e.faults[i]
		if !f.spec.When.Timed() {
			continue
		}
		if t, ok := f.spec.When.First(f.sched); ok {
			e.push(event{t: int64(t), evWho: evWho{slot: int32(i)}, evWhat: evWhat{kind: evFault}})
		}
	}
}
