package kubelet

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidebench/sidebench/reference-impl/api"
)

var update = flag.Bool("update", false, "rewrite testdata golden output")

// TestScripts runs the raft-style scripts in testdata/*.txt. Each block is
// a command line, optional argument lines, a "----" line and the expected
// output, ended by a blank line. Run with -update to rewrite the output.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

type block struct {
	cmd    string
	args   []string
	expect string
}

func parseScript(t *testing.T, path string) []block {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		b := block{cmd: l}
		i++
		for ; i < len(lines) && lines[i] != "----"; i++ {
			b.args = append(b.args, lines[i])
		}
		i++
		var out []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		b.expect = strings.Join(out, "\n")
		blocks = append(blocks, b)
	}
	return blocks
}

func runScript(t *testing.T, path string) {
	blocks := parseScript(t, path)
	env := &scriptEnv{}
	var rewritten strings.Builder
	rewritten.WriteString(headerComments(path))
	for _, b := range blocks {
		got := strings.TrimRight(env.run(b.cmd, b.args), "\n")
		if got == "" {
			got = "ok"
		}
		if *update {
			rewritten.WriteString(b.cmd + "\n")
			for _, a := range b.args {
				rewritten.WriteString(a + "\n")
			}
			rewritten.WriteString("----\n" + got + "\n\n")
			continue
		}
		if got != b.expect {
			t.Errorf("%s: %q:\n--- want\n%s\n--- got\n%s", path, b.cmd, b.expect, got)
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.TrimRight(rewritten.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// headerComments keeps the leading comment block of a script on -update.
func headerComments(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var b strings.Builder
	s := bufio.NewScanner(f)
	for s.Scan() {
		l := s.Text()
		if !strings.HasPrefix(l, "#") && strings.TrimSpace(l) != "" {
			break
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// scriptEnv drives a Machine and plays a scripted container runtime: the
// script says what the runtime does, the env turns it into inputs.
type scriptEnv struct {
	spec    *api.PodSpec
	gates   api.Gates
	m       *Machine
	now     api.Time
	sandbox api.Sandbox
	records []api.ContainerRecord
	// nextAttempt is the attempt of the last start the machine asked for.
	nextAttempt []uint32
	// deleted and deleteGrace are the API server's deletion state.
	deleted     bool
	deleteGrace time.Duration
}

func (e *scriptEnv) idx(name string) (int, error) {
	if e.spec == nil {
		return 0, fmt.Errorf("no pod yet")
	}
	i := e.spec.IndexOf(name)
	if i < 0 {
		return 0, fmt.Errorf("no container %q", name)
	}
	return i, nil
}

func kv(fields []string) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		} else {
			m[f] = ""
		}
	}
	return m
}

func (e *scriptEnv) run(cmd string, args []string) string {
	fields := strings.Fields(cmd)
	opts := kv(fields[1:])
	var in api.Input
	switch fields[0] {
	case "pod":
		return e.createPod(opts, args)
	case "advance":
		d, err := time.ParseDuration(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		e.now = e.now.Add(d)
		return fmt.Sprintf("now=%v", time.Duration(e.now))
	case "tick":
		in = api.Input{Kind: api.InTick}
	case "sandbox":
		switch fields[1] {
		case "ready":
			e.sandbox.State = api.SandboxReady
			if a, ok := opts["attempt"]; ok {
				n, _ := strconv.Atoi(a)
				e.sandbox.Attempt = uint32(n)
			}
		case "lost":
			// The node went down: the sandbox and every container died
			// with it, observed in one relist.
			e.sandbox.State = api.SandboxLost
			for i := range e.records {
				if e.records[i].State == api.StateRunning {
					e.records[i].State, e.records[i].ExitCode, e.records[i].Reason, e.records[i].FinishedAt = api.StateExited, 137, api.ReasonError, e.now
				}
			}
			in = api.Input{Kind: api.InRelist, Sandbox: e.sandbox, Records: append([]api.ContainerRecord(nil), e.records...), Status: e.m.Status()}
			return e.step(in)
		}
		in = api.Input{Kind: api.InSandbox, Sandbox: e.sandbox}
	case "running", "created", "unknown":
		i, err := e.idx(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		st := map[string]api.ContainerState{"running": api.StateRunning, "created": api.StateCreated, "unknown": api.StateUnknown}[fields[0]]
		r := &e.records[i]
		sameAttempt := r.State == api.StateCreated && r.Attempt == e.nextAttempt[i] && r.SandboxAttempt == e.sandbox.Attempt
		if fields[0] != "unknown" && !(fields[0] == "running" && sameAttempt) {
			// A new attempt; the runtime keeps the exited one before it.
			*r = r.Succeed(api.ContainerRecord{Attempt: e.nextAttempt[i], SandboxAttempt: e.sandbox.Attempt, Image: e.m.Spec().At(i).Image, CreatedAt: e.now,
				Resources: e.m.Spec().At(i).Resources})
		}
		if fields[0] == "running" {
			r.StartedAt = e.now
		}
		r.State = st
		in = api.Input{Kind: api.InContainer, Container: i, Record: *r}
	case "exit":
		i, err := e.idx(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		code, _ := strconv.Atoi(opts["code"])
		r := e.exited(i, code)
		if rs, ok := opts["reason"]; ok {
			r.Reason, _ = api.ParseReason(rs)
		}
		in = api.Input{Kind: api.InContainer, Container: i, Record: *r}
	case "gc", "removed":
		i, err := e.idx(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		e.records[i] = api.ContainerRecord{}
		in = api.Input{Kind: api.InContainer, Container: i}
	case "probe":
		i, err := e.idx(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		k := map[string]api.ProbeKind{"startup": api.ProbeStartup, "readiness": api.ProbeReadiness, "liveness": api.ProbeLiveness}[fields[2]]
		res := map[string]api.ProbeResult{"success": api.ProbeSuccess, "failure": api.ProbeFailure}[fields[3]]
		in = api.Input{Kind: api.InProbe, Container: i, Probe: k, Result: res}
	case "poststart-done", "prestop-done":
		i, err := e.idx(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		in = api.Input{Kind: api.InPostStartDone, Container: i, OK: true}
		if fields[0] == "prestop-done" {
			in.Kind = api.InPreStopDone
		}
		if _, fail := opts["fail"]; fail {
			in.OK = false
		}
	case "delete", "shutdown":
		g, err := time.ParseDuration(opts["grace"])
		if err != nil {
			return "error: " + err.Error()
		}
		in = api.Input{Kind: api.InDelete, Grace: g}
		if fields[0] == "shutdown" {
			in.Kind = api.InNodeShutdown
		} else {
			e.deleted, e.deleteGrace = true, g
		}
	case "image":
		i, err := e.idx(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		in = api.Input{Kind: api.InImage, Container: i, Image: fields[2]}
	case "resize":
		// resize NAME [cpu=MILLI] [mem=MIB]: the spec requests change.
		i, err := e.idx(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		res := e.m.Spec().At(i).Resources
		if v, ok := opts["cpu"]; ok {
			n, _ := strconv.Atoi(v)
			res.CPURequest = int64(n)
		}
		if v, ok := opts["mem"]; ok {
			n, _ := strconv.Atoi(v)
			res.MemRequest = int64(n) << 20
		}
		in = api.Input{Kind: api.InResize, Container: i, Resources: res}
	case "resized":
		// The runtime applied the resize the machine asked for.
		i, err := e.idx(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		e.records[i].Resources = e.m.Spec().At(i).Resources
		in = api.Input{Kind: api.InContainer, Container: i, Record: e.records[i]}
	case "start-failed":
		i, err := e.idx(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		in = api.Input{Kind: api.InActionFailed, Action: api.ActStartContainer, Container: i}
		if _, pull := opts["pull"]; pull {
			in.PullFailed = true // ErrImagePull
		}
	case "stop-failed":
		// The runtime refused StopContainer (it was down).
		i, err := e.idx(fields[1])
		if err != nil {
			return "error: " + err.Error()
		}
		in = api.Input{Kind: api.InActionFailed, Action: api.ActStopContainer, Container: i}
	case "stop-sandbox-failed":
		// The runtime refused StopPodSandbox (it was down).
		in = api.Input{Kind: api.InActionFailed, Action: api.ActStopSandbox}
	case "restart-kubelet":
		// The old kubelet's memory is gone; the new one relists the
		// runtime and seeds Started from the API server's last status.
		// gone=A/B: those containers exited and their records were
		// removed while no kubelet ran; exited=A:code/B:code: those
		// containers exited with that code while no kubelet ran;
		// sandbox=lost: the sandbox was lost while no kubelet ran.
		last := e.m.Status()
		if x, ok := opts["exited"]; ok {
			for _, ex := range strings.Split(x, "/") {
				name, codeText, _ := strings.Cut(ex, ":")
				i, err := e.idx(name)
				if err != nil {
					return "error: " + err.Error()
				}
				code, err := strconv.Atoi(codeText)
				if err != nil {
					return "error: exited=" + ex + ": want name:code"
				}
				e.exited(i, code)
			}
		}
		if opts["sandbox"] == "lost" {
			// The runtime lost the sandbox (a restart that killed the
			// containers) while no kubelet ran to hear of it.
			e.sandbox.State = api.SandboxLost
		}
		if g, ok := opts["gone"]; ok {
			for _, name := range strings.Split(g, "/") {
				i, err := e.idx(name)
				if err != nil {
					return "error: " + err.Error()
				}
				e.records[i] = api.ContainerRecord{}
			}
		}
		m, err := NewMachine(e.spec, e.gates)
		if err != nil {
			return "error: " + err.Error()
		}
		e.m = m
		in = api.Input{Kind: api.InRelist, Sandbox: e.sandbox, Records: append([]api.ContainerRecord(nil), e.records...), Status: last, Deleted: e.deleted, Grace: e.deleteGrace}
	case "status":
		return e.formatStatus(e.m.Status())
	case "images":
		// The machine's spec images, in spec order.
		var out []string
		for i := 0; i < e.m.Spec().Len(); i++ {
			out = append(out, e.name(i)+"="+e.m.Spec().At(i).Image)
		}
		return strings.Join(out, " ")
	default:
		return "error: unknown command " + fields[0]
	}
	// more: the next command's input is part of the same observation (a
	// relist after the runtime is back); the machine plans after it.
	_, in.More = opts["more"]
	return e.step(in)
}

// exited makes container i's record an exit with code now (Completed for 0,
// else Error).
func (e *scriptEnv) exited(i, code int) *api.ContainerRecord {
	r := &e.records[i]
	r.State, r.ExitCode, r.FinishedAt, r.Reason = api.StateExited, int32(code), e.now, api.ReasonCompleted
	if code != 0 {
		r.Reason = api.ReasonError
	}
	return r
}

func (e *scriptEnv) createPod(opts map[string]string, lines []string) string {
	spec := &api.PodSpec{TerminationGracePeriod: api.DefaultTerminationGracePeriod}
	if g, ok := opts["grace"]; ok {
		d, err := time.ParseDuration(g)
		if err != nil {
			return "error: " + err.Error()
		}
		spec.TerminationGracePeriod = d
	}
	switch opts["restart"] {
	case "", "Always":
	case "OnFailure":
		spec.RestartPolicy = api.RestartOnFailure
	case "Never":
		spec.RestartPolicy = api.RestartNever
	}
	gates, err := api.ParseGates(orDefault(opts["policy"], "kep753"))
	if err != nil {
		return "error: " + err.Error()
	}
	for _, l := range lines {
		f := strings.Fields(l)
		c := api.Container{Name: f[1], Image: f[1] + ":v1"}
		probe := &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
		for k, v := range kv(f[2:]) {
			switch k {
			case "policy":
				rp := map[string]api.RestartPolicy{"Always": api.RestartAlways, "OnFailure": api.RestartOnFailure, "Never": api.RestartNever}[v]
				c.RestartPolicy = &rp
			case "rules":
				// rules=ACTION:OP:CODE[/CODE...][,...], e.g. RestartAll:In:42
				for _, rs := range strings.Split(v, ",") {
					parts := strings.Split(rs, ":")
					rule := api.RestartRule{Action: api.RuleRestart, Operator: api.OpIn}
					if parts[0] == "RestartAll" {
						rule.Action = api.RuleRestartAllContainers
					}
					if parts[1] == "NotIn" {
						rule.Operator = api.OpNotIn
					}
					for _, cs := range strings.Split(parts[2], "/") {
						n, _ := strconv.Atoi(cs)
						rule.Values = append(rule.Values, int32(n))
					}
					c.RestartRules = append(c.RestartRules, rule)
				}
			case "startup":
				c.StartupProbe = probe
			case "readiness":
				c.ReadinessProbe = probe
			case "liveness":
				c.LivenessProbe = probe
			case "poststart":
				c.PostStart = true
			case "cpu":
				n, _ := strconv.Atoi(v)
				c.Resources.CPURequest = int64(n)
			case "mem":
				n, _ := strconv.Atoi(v)
				c.Resources.MemRequest = int64(n) << 20
			case "restart-on":
				c.ResizePolicy.CPURestart = v == "cpu"
				c.ResizePolicy.MemRestart = v == "memory"
			case "prestop":
				c.PreStop = true
			}
		}
		switch f[0] {
		case "init":
			c.Role = api.RoleInit
			spec.Init = append(spec.Init, c)
		case "sidecar":
			c.Role = api.RoleSidecar
			spec.Init = append(spec.Init, c)
		case "main":
			c.Role = api.RoleMain
			spec.Main = append(spec.Main, c)
		}
	}
	m, err := NewMachine(spec, gates)
	if err != nil {
		return "error: " + err.Error()
	}
	e.spec, e.gates, e.m = spec, gates, m
	e.records = make([]api.ContainerRecord, spec.Len())
	e.nextAttempt = make([]uint32, spec.Len())
	e.sandbox = api.Sandbox{}
	return e.step(api.Input{Kind: api.InRelist, Records: e.records})
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (e *scriptEnv) step(in api.Input) string {
	if err := e.m.Step(e.now, in); err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for e.m.HasReady() {
		rd := e.m.Ready()
		for _, a := range rd.Actions {
			b.WriteString(e.formatAction(a) + "\n")
			if a.Kind == api.ActStartContainer {
				e.nextAttempt[a.Container] = a.Attempt
			}
		}
		for _, tr := range rd.Trace {
			b.WriteString(e.formatTrace(tr) + "\n")
		}
		if rd.WakeAt != api.Never {
			fmt.Fprintf(&b, "wake at %v\n", time.Duration(rd.WakeAt))
		}
		e.m.Advance(rd)
	}
	return b.String()
}

func (e *scriptEnv) name(i int) string { return e.spec.At(i).Name }

func (e *scriptEnv) formatAction(a api.Action) string {
	switch a.Kind {
	case api.ActCreateSandbox:
		return fmt.Sprintf("> create-sandbox attempt=%d", a.Attempt)
	case api.ActStartContainer:
		return fmt.Sprintf("> start %s attempt=%d", e.name(a.Container), a.Attempt)
	case api.ActRunPreStop:
		return fmt.Sprintf("> prestop %s reason=%s", e.name(a.Container), a.Reason)
	case api.ActStopContainer:
		return fmt.Sprintf("> stop %s grace=%v reason=%s", e.name(a.Container), a.Grace, a.Reason)
	case api.ActStopSandbox:
		return "> stop-sandbox"
	case api.ActRemoveContainer:
		return fmt.Sprintf("> remove %s reason=%s", e.name(a.Container), a.Reason)
	case api.ActResizeContainer:
		return fmt.Sprintf("> resize %s cpu=%dm mem=%dMi", e.name(a.Container), a.Resources.CPURequest, a.Resources.MemRequest>>20)
	}
	return "> ?"
}

func (e *scriptEnv) formatTrace(tr api.TraceEvent) string {
	switch tr.Kind {
	case api.TracePhase:
		return "phase " + tr.Phase.String()
	case api.TraceCondition:
		return fmt.Sprintf("condition %s=%v", tr.Cond, tr.Value)
	case api.TraceStarted:
		return fmt.Sprintf("started %s=%v", e.name(tr.Container), tr.Value)
	case api.TraceReady:
		return fmt.Sprintf("ready %s=%v", e.name(tr.Container), tr.Value)
	case api.TraceTerminating:
		return fmt.Sprintf("terminating reason=%s grace=%v ordered=%v", tr.Reason, tr.Grace, tr.Value)
	case api.TraceBackoff:
		return fmt.Sprintf("backoff %s until %v", e.name(tr.Container), time.Duration(tr.At))
	}
	return "?"
}

func (e *scriptEnv) formatStatus(st api.PodStatus) string {
	var started, ready []string
	for i := 0; i < e.spec.Len(); i++ {
		if st.Started.Has(i) {
			started = append(started, e.name(i))
		}
		if st.ReadySet.Has(i) {
			ready = append(ready, e.name(i))
		}
	}
	sort.Strings(started)
	sort.Strings(ready)
	return fmt.Sprintf("phase=%s initialized=%v containersReady=%v started=[%s] ready=[%s]", st.Phase, st.Initialized, st.ContainersReady, strings.Join(started, " "), strings.Join(ready, " "))
}
