package api

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// A workaround policy runs a scenario's pod the way people ran sidecars
// before Kubernetes 1.28 had native ones: the pod template is written once,
// with native sidecars (init containers with restartPolicy: Always), and
// the workaround turns it into what people wrote instead (the sidecars as
// regular containers, an entrypoint wrapper, a postStart or preStop hook, a
// quit signal). The kubelet then runs the transformed pod under the final
// design (PolicyKEP753): it has no native sidecars, so the kubelet is a
// plain one. harness/workaround applies the transform; docs/workarounds.md
// names each workaround's real-world source and parameters.
//
// The policy string is "workaround:" followed by one or more workarounds
// joined with "+", each a name with optional parameters in parentheses:
//
//	workaround:wait-wrapper
//	workaround:wait-wrapper(poll=500ms,timeout=15s,onTimeout=start)
//	workaround:hold-until-proxy-starts(drain=zero-connections)
//	workaround:wait-wrapper+prestop-sleep(sleep=10s)

// WorkaroundPrefix starts every workaround policy string.
const WorkaroundPrefix = "workaround:"

// WorkaroundKind names one pre-1.28 sidecar workaround.
type WorkaroundKind uint8

const (
	// WaitWrapper: each main container's entrypoint polls the sidecars'
	// readiness before it execs the application (a shell loop around
	// curl, wait-for-it.sh). Nothing orders the exits.
	WaitWrapper WorkaroundKind = iota + 1
	// HoldUntilProxyStarts is Istio's holdApplicationUntilProxyStarts: the
	// sidecars become the first regular containers, each with a postStart
	// hook that polls its readiness (pilot-agent wait); the kubelet starts
	// containers one by one and waits for a postStart before the next. On
	// the way down a preStop sleeps or waits for zero connections.
	HoldUntilProxyStarts
	// JobQuitSignal is the scuttle / quitquitquit / shared-file pattern for
	// Jobs: the main's wrapper waits for the sidecars, runs the
	// application, and on its exit tells the sidecars to quit (an HTTP
	// call or a file); a sidecar exits when told. A main that is
	// SIGKILLed or OOM-killed never tells them.
	JobQuitSignal
	// PreStopSleep: each sidecar's preStop sleeps so that it outlives the
	// mains during termination.
	PreStopSleep
)

var workaroundNames = [...]string{"", "wait-wrapper", "hold-until-proxy-starts", "job-quit-signal", "prestop-sleep"}

func (k WorkaroundKind) String() string {
	if k > 0 && int(k) < len(workaroundNames) {
		return workaroundNames[k]
	}
	return fmt.Sprintf("WorkaroundKind(%d)", uint8(k))
}

// WorkaroundNames returns the valid workaround names.
func WorkaroundNames() []string { return append([]string(nil), workaroundNames[1:]...) }

// OnTimeout says what a wait does when its timeout expires.
type OnTimeout uint8

const (
	// TimeoutStart: start the application anyway (wait-for-it.sh without
	// --strict).
	TimeoutStart OnTimeout = iota
	// TimeoutFail: exit 1 (a wait command that fails, a postStart hook
	// that fails: the kubelet kills the container).
	TimeoutFail
)

func (o OnTimeout) String() string {
	if o == TimeoutFail {
		return "fail"
	}
	return "start"
}

// QuitVia is how a JobQuitSignal main tells its sidecars to quit.
type QuitVia uint8

const (
	// QuitHTTP: one request to the sidecar's quit endpoint (scuttle's
	// POST /quitquitquit): lost if the sidecar is not running then.
	QuitHTTP QuitVia = iota
	// QuitFile: a file on a shared emptyDir that the sidecar's wrapper
	// polls for; it persists, so a restarted sidecar sees it too.
	QuitFile
)

func (v QuitVia) String() string {
	if v == QuitFile {
		return "file"
	}
	return "http"
}

// Workaround is one workaround with its parameters. The zero value of a
// parameter means its kind's default (WorkaroundDefaults).
type Workaround struct {
	Kind WorkaroundKind
	// Poll is the period at which a wait polls readiness (WaitWrapper,
	// HoldUntilProxyStarts, JobQuitSignal's start wait) or a sidecar's
	// wrapper polls for the quit file (JobQuitSignal via file).
	Poll time.Duration
	// Timeout bounds a wait; 0: no timeout (wait forever). OnTimeout says
	// what follows.
	Timeout   time.Duration
	OnTimeout OnTimeout
	// Sleep is PreStopSleep's preStop sleep, and HoldUntilProxyStarts'
	// drain sleep unless ZeroConnections.
	Sleep time.Duration
	// ZeroConnections: HoldUntilProxyStarts' preStop waits until the
	// mains have no connection left (they exited), polling every Poll.
	ZeroConnections bool
	// Via and NoWait: JobQuitSignal's signal channel, and whether its
	// wrapper skips scuttle's wait for the sidecars before the exec.
	Via    QuitVia
	NoWait bool
}

// WorkaroundDefaults returns the parameters a workaround of kind k has
// when the policy string names none: each default is its real-world
// source's (docs/workarounds.md).
func WorkaroundDefaults(k WorkaroundKind) Workaround {
	w := Workaround{Kind: k}
	switch k {
	case WaitWrapper:
		// `until curl -fs .../ready; do sleep 1; done; exec app`: poll
		// every second, no timeout.
		w.Poll = time.Second
	case HoldUntilProxyStarts:
		// pilot-agent wait: --periodMillis 500, --timeoutSeconds 60, and
		// the hook fails on timeout; Istio's terminationDrainDuration 5s.
		w.Poll, w.Timeout, w.OnTimeout, w.Sleep = 500*time.Millisecond, 60*time.Second, TimeoutFail, 5*time.Second
	case JobQuitSignal:
		// scuttle: polls Envoy every second until it is live, no timeout,
		// then POST /quitquitquit when the application exits.
		w.Poll = time.Second
	case PreStopSleep:
		w.Sleep = 5 * time.Second
	}
	return w
}

// param is one parameter of a workaround kind: its name, how to print the
// value of w, and how to set it from text.
type param struct {
	name  string
	kinds []WorkaroundKind
	get   func(w *Workaround) string
	set   func(w *Workaround, v string) error
	help  string
}

func durationParam(name, help string, field func(w *Workaround) *time.Duration, zeroOK bool, kinds ...WorkaroundKind) param {
	return param{name: name, kinds: kinds, help: help,
		get: func(w *Workaround) string { return field(w).String() },
		set: func(w *Workaround, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s=%q: not a duration (e.g. 500ms, 15s)", name, v)
			}
			if d < 0 || (d == 0 && !zeroOK) {
				return fmt.Errorf("%s=%s: must be > 0", name, v)
			}
			*field(w) = d
			return nil
		}}
}

func choiceParam(name, help string, choices []string, get func(w *Workaround) int, set func(w *Workaround, i int), kinds ...WorkaroundKind) param {
	return param{name: name, kinds: kinds, help: help,
		get: func(w *Workaround) string { return choices[get(w)] },
		set: func(w *Workaround, v string) error {
			for i, c := range choices {
				if c == v {
					set(w, i)
					return nil
				}
			}
			return fmt.Errorf("%s=%q: allowed: %s", name, v, strings.Join(choices, ", "))
		}}
}

// params in canonical order.
var params = []param{
	durationParam("poll", "readiness poll period", func(w *Workaround) *time.Duration { return &w.Poll }, false, WaitWrapper, HoldUntilProxyStarts, JobQuitSignal),
	durationParam("timeout", "wait timeout (0: wait forever)", func(w *Workaround) *time.Duration { return &w.Timeout }, true, WaitWrapper, HoldUntilProxyStarts, JobQuitSignal),
	choiceParam("onTimeout", "after the timeout: start the application anyway, or fail (exit 1 / failed hook)", []string{"start", "fail"},
		func(w *Workaround) int { return int(w.OnTimeout) }, func(w *Workaround, i int) { w.OnTimeout = OnTimeout(i) }, WaitWrapper, JobQuitSignal),
	durationParam("sleep", "the sidecars' preStop sleep", func(w *Workaround) *time.Duration { return &w.Sleep }, false, PreStopSleep),
	{name: "drain", kinds: []WorkaroundKind{HoldUntilProxyStarts}, help: "the proxy's preStop: sleep DURATION, or zero-connections (wait until the mains exited)",
		get: func(w *Workaround) string {
			if w.ZeroConnections {
				return "zero-connections"
			}
			return w.Sleep.String()
		},
		set: func(w *Workaround, v string) error {
			if v == "zero-connections" {
				w.ZeroConnections = true
				return nil
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("drain=%q: a duration > 0 (the preStop sleep) or zero-connections", v)
			}
			w.Sleep, w.ZeroConnections = d, false
			return nil
		}},
	choiceParam("via", "how the main tells the sidecars to quit: http (scuttle's /quitquitquit, lost if the sidecar is down) or file (a shared file the sidecar polls for)", []string{"http", "file"},
		func(w *Workaround) int { return int(w.Via) }, func(w *Workaround, i int) { w.Via = QuitVia(i) }, JobQuitSignal),
	choiceParam("wait", "whether the main's wrapper waits for the sidecars' readiness before it execs the application", []string{"on", "off"},
		func(w *Workaround) int {
			if w.NoWait {
				return 1
			}
			return 0
		}, func(w *Workaround, i int) { w.NoWait = i == 1 }, JobQuitSignal),
}

func (p *param) appliesTo(k WorkaroundKind) bool {
	for _, x := range p.kinds {
		if x == k {
			return true
		}
	}
	return false
}

// WorkaroundParams returns the parameter names of kind k, in canonical
// order.
func WorkaroundParams(k WorkaroundKind) []string {
	var out []string
	for i := range params {
		if params[i].appliesTo(k) {
			out = append(out, params[i].name)
		}
	}
	return out
}

// String renders w as ParseGates accepts it: the name, then the
// parameters that differ from the defaults, in canonical order.
func (w Workaround) String() string {
	def := WorkaroundDefaults(w.Kind)
	var kv []string
	for i := range params {
		p := &params[i]
		if !p.appliesTo(w.Kind) {
			continue
		}
		if v := p.get(&w); v != p.get(&def) {
			kv = append(kv, p.name+"="+v)
		}
	}
	if len(kv) == 0 {
		return w.Kind.String()
	}
	return w.Kind.String() + "(" + strings.Join(kv, ",") + ")"
}

// Explain says in one sentence what w does to a pod (for `sidebench
// validate`).
func (w Workaround) Explain() string {
	timeout := "no timeout"
	if w.Timeout > 0 {
		timeout = fmt.Sprintf("timeout %s, then %s", w.Timeout, map[OnTimeout]string{TimeoutStart: "starts the application anyway", TimeoutFail: "exits 1"}[w.OnTimeout])
	}
	switch w.Kind {
	case WaitWrapper:
		return fmt.Sprintf("sidecars become regular containers after the mains; each main's entrypoint polls the sidecars' readiness every %s (%s) before it execs the application; nothing orders the exits", w.Poll, timeout)
	case HoldUntilProxyStarts:
		drain := fmt.Sprintf("a preStop that sleeps %s", w.Sleep)
		if w.ZeroConnections {
			drain = fmt.Sprintf("a preStop that waits until the mains have exited (zero connections), polling every %s", w.Poll)
		}
		return fmt.Sprintf("sidecars become the first regular containers with a postStart hook that polls their readiness every %s (timeout %s, then the hook fails) and %s; the kubelet's serial start holds the mains until the hook returns", w.Poll, w.Timeout, drain)
	case JobQuitSignal:
		wait := fmt.Sprintf("waits for the sidecars' readiness (poll %s, %s), runs the application and, ", w.Poll, timeout)
		if w.NoWait {
			wait = "runs the application and, "
		}
		via := "POSTs /quitquitquit to each sidecar (lost if it is not running)"
		if w.Via == QuitFile {
			via = fmt.Sprintf("writes a shared quit file that each sidecar's wrapper polls for every %s", w.Poll)
		}
		return fmt.Sprintf("sidecars become regular containers after the mains that exit 0 when told to quit; each main's wrapper %sunless it was SIGKILLed or OOM-killed, %s", wait, via)
	case PreStopSleep:
		return fmt.Sprintf("sidecars become regular containers after the mains with a preStop that sleeps %s; nothing orders the starts", w.Sleep)
	}
	return w.String()
}

// WorkaroundSet is a workaround policy: its workarounds in the order the
// policy string names them (kinds are unique).
type WorkaroundSet []Workaround

// Has returns the workaround of kind k, or nil.
func (s WorkaroundSet) Has(k WorkaroundKind) *Workaround {
	for i := range s {
		if s[i].Kind == k {
			return &s[i]
		}
	}
	return nil
}

// String renders the set as the policy string.
func (s WorkaroundSet) String() string {
	parts := make([]string, len(s))
	for i := range s {
		parts[i] = s[i].String()
	}
	return WorkaroundPrefix + strings.Join(parts, "+")
}

// parseWorkarounds parses the part of a policy string after
// WorkaroundPrefix: "NAME[(K=V,...)][+NAME...]".
func parseWorkarounds(s string) (WorkaroundSet, error) {
	if s == "" {
		return nil, fmt.Errorf("workaround policy needs a workaround name (allowed: %s)", strings.Join(WorkaroundNames(), ", "))
	}
	var out WorkaroundSet
	for _, part := range splitTop(s) {
		w, err := parseWorkaround(part)
		if err != nil {
			return nil, err
		}
		if out.Has(w.Kind) != nil {
			return nil, fmt.Errorf("workaround %s named twice", w.Kind)
		}
		if (w.Kind == PreStopSleep && out.Has(HoldUntilProxyStarts) != nil) || (w.Kind == HoldUntilProxyStarts && out.Has(PreStopSleep) != nil) {
			return nil, fmt.Errorf("hold-until-proxy-starts and prestop-sleep both give the sidecars a preStop: set hold-until-proxy-starts(drain=DURATION) instead")
		}
		out = append(out, w)
	}
	return out, nil
}

// splitTop splits on '+' outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case '+':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func parseWorkaround(s string) (Workaround, error) {
	name, args, hasArgs := strings.Cut(s, "(")
	var kind WorkaroundKind
	for i, n := range workaroundNames {
		if i > 0 && n == name {
			kind = WorkaroundKind(i)
		}
	}
	if kind == 0 {
		if strings.HasPrefix(name, "bug:") || name == "SidecarsRestartableDuringPodTermination" || name == "ContainerRestartRules" || name == "RestartAllContainersOnContainerExits" {
			return Workaround{}, fmt.Errorf("%q cannot follow a workaround: a workaround runs the pod without native sidecars under a plain kubelet, so feature gates and bug replicas do not apply", name)
		}
		return Workaround{}, fmt.Errorf("unknown workaround %q (allowed: %s)", name, strings.Join(WorkaroundNames(), ", "))
	}
	w := WorkaroundDefaults(kind)
	if !hasArgs {
		return w, nil
	}
	if !strings.HasSuffix(args, ")") {
		return w, fmt.Errorf("workaround %s: parameters must end with ')' (in a YAML flow list [a, b] a ',' splits the item: quote the policy or use a block list)", name)
	}
	args = strings.TrimSuffix(args, ")")
	if args == "" {
		return w, nil
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(args, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return w, fmt.Errorf("workaround %s: parameter %q is not KEY=VALUE (allowed keys: %s)", name, kv, strings.Join(WorkaroundParams(kind), ", "))
		}
		var p *param
		for i := range params {
			if params[i].name == k && params[i].appliesTo(kind) {
				p = &params[i]
			}
		}
		if p == nil {
			return w, fmt.Errorf("workaround %s: unknown parameter %q (allowed: %s)", name, k, strings.Join(WorkaroundParams(kind), ", "))
		}
		if seen[k] {
			return w, fmt.Errorf("workaround %s: parameter %s given twice", name, k)
		}
		seen[k] = true
		if err := p.set(&w, v); err != nil {
			return w, fmt.Errorf("workaround %s: %w", name, err)
		}
	}
	return w, nil
}

// WorkaroundHelp documents every workaround and its parameters (for
// docs and --help).
func WorkaroundHelp() string {
	var b strings.Builder
	for k := WaitWrapper; k <= PreStopSleep; k++ {
		def := WorkaroundDefaults(k)
		fmt.Fprintf(&b, "%s%s: %s\n", WorkaroundPrefix, k, def.Explain())
		names := WorkaroundParams(k)
		sort.Strings(names)
		for _, n := range names {
			for i := range params {
				if params[i].name == n && params[i].appliesTo(k) {
					fmt.Fprintf(&b, "  %s (default %s): %s\n", n, params[i].get(&def), params[i].help)
				}
			}
		}
	}
	return b.String()
}
