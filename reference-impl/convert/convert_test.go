package convert

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/sidebench/sidebench/reference-impl/api"
)

func ptr[T any](v T) *T { return &v }

// basePod is a pod with one sidecar (startup probe, preStop), one regular
// init container and one main container.
func basePod() *corev1.PodSpec {
	return &corev1.PodSpec{
		InitContainers: []corev1.Container{
			{
				Name: "proxy", Image: "envoy:1", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
				StartupProbe: &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 30},
				Lifecycle:    &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}},
				Env:          []corev1.EnvVar{{Name: "IGNORED", Value: "yes"}},
			},
			{Name: "migrate", Image: "migrate:1"},
		},
		Containers: []corev1.Container{{Name: "app", Image: "app:1", ReadinessProbe: &corev1.Probe{}}},
	}
}

func baseWant() api.PodSpec {
	return api.PodSpec{
		Init: []api.Container{
			{Name: "proxy", Image: "envoy:1", Role: api.RoleSidecar, PreStop: true,
				StartupProbe: &api.Probe{Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 30}},
			{Name: "migrate", Image: "migrate:1", Role: api.RoleInit},
		},
		Main: []api.Container{{Name: "app", Image: "app:1", Role: api.RoleMain,
			ReadinessProbe: &api.Probe{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}}},
		RestartPolicy:          api.RestartAlways,
		TerminationGracePeriod: 30 * time.Second,
	}
}

func TestPodSpecFromV1(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*corev1.PodSpec)
		want    func(*api.PodSpec)
		wantErr string // substring; the container name and rule must appear
	}{
		{name: "sidecar is an init container with restartPolicy Always; defaults applied"},
		{
			name: "terminationGracePeriodSeconds and pod restartPolicy are taken over",
			mutate: func(p *corev1.PodSpec) {
				p.TerminationGracePeriodSeconds = ptr(int64(5))
				p.RestartPolicy = corev1.RestartPolicyNever
			},
			want: func(s *api.PodSpec) { s.TerminationGracePeriod = 5 * time.Second; s.RestartPolicy = api.RestartNever },
		},
		{
			name:   "OnFailure",
			mutate: func(p *corev1.PodSpec) { p.RestartPolicy = corev1.RestartPolicyOnFailure },
			want:   func(s *api.PodSpec) { s.RestartPolicy = api.RestartOnFailure },
		},
		{
			name:   "system-node-critical is critical",
			mutate: func(p *corev1.PodSpec) { p.PriorityClassName = "system-node-critical" },
			want:   func(s *api.PodSpec) { s.Critical, s.NodeCritical = true, true },
		},
		{
			name:   "system-cluster-critical is critical",
			mutate: func(p *corev1.PodSpec) { p.PriorityClassName = "system-cluster-critical" },
			want:   func(s *api.PodSpec) { s.Critical = true },
		},
		{
			name:   "other priority classes are not critical",
			mutate: func(p *corev1.PodSpec) { p.PriorityClassName = "high" },
		},
		{
			name: "probe fields and probe-level grace",
			mutate: func(p *corev1.PodSpec) {
				p.Containers[0].LivenessProbe = &corev1.Probe{InitialDelaySeconds: 3, PeriodSeconds: 2, TimeoutSeconds: 4, FailureThreshold: 5, SuccessThreshold: 1, TerminationGracePeriodSeconds: ptr(int64(7))}
			},
			want: func(s *api.PodSpec) {
				s.Main[0].LivenessProbe = &api.Probe{InitialDelay: 3 * time.Second, Period: 2 * time.Second, Timeout: 4 * time.Second, FailureThreshold: 5, SuccessThreshold: 1, TerminationGracePeriod: 7 * time.Second}
			},
		},
		{
			name: "resources, resize policy and overhead; a limit alone sets the request",
			mutate: func(p *corev1.PodSpec) {
				p.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
				p.InitContainers[0].Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				}
				p.InitContainers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
			},
			want: func(s *api.PodSpec) {
				s.OverheadCPU, s.OverheadMem = 10, 16<<20
				s.Init[0].Resources = api.Resources{CPURequest: 100, CPULimit: 1000, MemRequest: 64 << 20, MemLimit: 64 << 20}
				s.Init[0].ResizePolicy.MemRestart = true
			},
		},
		{
			name: "RestartContainer resize policy on a regular init container is rejected",
			mutate: func(p *corev1.PodSpec) {
				p.InitContainers[1].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
			},
			wantErr: `"migrate": resizePolicy`,
		},
		{
			name: "postStart presence",
			mutate: func(p *corev1.PodSpec) {
				p.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{}}
			},
			want: func(s *api.PodSpec) { s.Main[0].PostStart = true },
		},
		{
			name:    "probe on a regular init container is rejected (INV-P4)",
			mutate:  func(p *corev1.PodSpec) { p.InitContainers[1].ReadinessProbe = &corev1.Probe{} },
			wantErr: `container "migrate": INV-P4`,
		},
		{
			name: "hook on a regular init container is rejected (INV-P4)",
			mutate: func(p *corev1.PodSpec) {
				p.InitContainers[1].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}
			},
			wantErr: `container "migrate": INV-P4`,
		},
		{
			// validateInitContainerRestartPolicy (ContainerRestartRules):
			// OnFailure or Never on a regular init container is its own
			// policy, with rules; it stays a regular init container.
			name: "init container restartPolicy Never with rules is a regular init container's own policy",
			mutate: func(p *corev1.PodSpec) {
				p.InitContainers[1].RestartPolicy = ptr(corev1.ContainerRestartPolicyNever)
				p.InitContainers[1].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
					ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
			},
			want: func(s *api.PodSpec) {
				s.Init[1].RestartPolicy = ptr(api.RestartNever)
				s.Init[1].RestartRules = []api.RestartRule{{Action: api.RuleRestart, Operator: api.OpIn, Values: []int32{42}}}
			},
		},
		{
			name: "init container restartPolicy other than Always, OnFailure, Never",
			mutate: func(p *corev1.PodSpec) {
				p.InitContainers[1].RestartPolicy = ptr(corev1.ContainerRestartPolicy("Allways"))
			},
			wantErr: `container "migrate" (initContainers[1].restartPolicy): sidecar`,
		},
		{
			name: "restartPolicyRules on a regular init container without its own restartPolicy",
			mutate: func(p *corev1.PodSpec) {
				p.InitContainers[1].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
					ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
			},
			wantErr: `container "migrate"`,
		},
		{
			name: "unknown restartPolicy on a main container",
			mutate: func(p *corev1.PodSpec) {
				p.Containers[0].RestartPolicy = ptr(corev1.ContainerRestartPolicy("Sometimes"))
			},
			wantErr: `container "app" (containers[0].restartPolicy): restartPolicy`,
		},
		{
			name:    "duplicate names",
			mutate:  func(p *corev1.PodSpec) { p.Containers[0].Name = "proxy" },
			wantErr: `container "proxy": unique-names`,
		},
		{
			name:    "no main container",
			mutate:  func(p *corev1.PodSpec) { p.Containers = nil },
			wantErr: "pod: containers",
		},
		{
			name:    "negative grace",
			mutate:  func(p *corev1.PodSpec) { p.TerminationGracePeriodSeconds = ptr(int64(-1)) },
			wantErr: "terminationGracePeriodSeconds",
		},
		{
			name:    "bad pod restartPolicy",
			mutate:  func(p *corev1.PodSpec) { p.RestartPolicy = "Sometimes" },
			wantErr: `unsupported value "Sometimes"`,
		},
		{
			name:    "startup probe success threshold must be 1",
			mutate:  func(p *corev1.PodSpec) { p.InitContainers[0].StartupProbe.SuccessThreshold = 2 },
			wantErr: `container "proxy": startupProbe.successThreshold`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := basePod()
			if tt.mutate != nil {
				tt.mutate(in)
			}
			got, err := PodSpecFromV1(in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := baseWant()
			if tt.want != nil {
				tt.want(&want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestNil(t *testing.T) {
	if _, err := PodSpecFromV1(nil); err == nil {
		t.Fatal("want error")
	}
}

func TestRoundTrip(t *testing.T) {
	specs := map[string]api.PodSpec{
		"base": baseWant(),
		"job": {
			Init: []api.Container{
				{Name: "a", Role: api.RoleSidecar, PostStart: true, PreStop: true,
					LivenessProbe: &api.Probe{Period: 5 * time.Second, Timeout: 2 * time.Second, SuccessThreshold: 1, FailureThreshold: 1, TerminationGracePeriod: 3 * time.Second}},
				{Name: "b", Role: api.RoleSidecar},
			},
			Main: []api.Container{{Name: "m1", Role: api.RoleMain, Resources: api.Resources{CPURequest: 250, CPULimit: 500, MemRequest: 1 << 20, MemLimit: 2 << 20},
				ResizePolicy: api.ResizePolicy{CPURestart: true, MemRestart: true}}, {Name: "m2", Role: api.RoleMain, PreStop: true}},
			// OnFailure: a Never pod cannot have a RestartContainer resize policy.
			RestartPolicy:          api.RestartOnFailure,
			TerminationGracePeriod: 0,
			Critical:               true,
			NodeCritical:           true,
			OverheadCPU:            5,
			OverheadMem:            1 << 20,
		},
	}
	for name, s := range specs {
		t.Run(name, func(t *testing.T) {
			v1 := PodSpecToV1(s)
			// Through YAML too, as users paste manifests.
			b, err := yaml.Marshal(v1)
			if err != nil {
				t.Fatal(err)
			}
			var back corev1.PodSpec
			if err := yaml.UnmarshalStrict(b, &back); err != nil {
				t.Fatal(err)
			}
			got, err := PodSpecFromV1(&back)
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			if !reflect.DeepEqual(got, s) {
				t.Fatalf("round trip:\ngot  %+v\nwant %+v\nyaml:\n%s", got, s, b)
			}
		})
	}
}

func TestFromYAMLManifest(t *testing.T) {
	const manifest = `
restartPolicy: Never
terminationGracePeriodSeconds: 10
initContainers:
- name: istio-proxy
  image: istio/proxyv2:1.22
  restartPolicy: Always
  resources: {requests: {cpu: 100m}}
  startupProbe:
    httpGet: {path: /healthz/ready, port: 15021}
    periodSeconds: 1
    failureThreshold: 600
containers:
- name: job
  image: busybox
  command: [sh, -c, "sleep 5"]
`
	var ps corev1.PodSpec
	if err := yaml.UnmarshalStrict([]byte(manifest), &ps); err != nil {
		t.Fatal(err)
	}
	s, err := PodSpecFromV1(&ps)
	if err != nil {
		t.Fatal(err)
	}
	if s.Init[0].Role != api.RoleSidecar || s.RestartPolicy != api.RestartNever || s.TerminationGracePeriod != 10*time.Second || s.Init[0].StartupProbe.FailureThreshold != 600 {
		t.Fatalf("unexpected %+v", s)
	}
}

// TestRestartRulesRoundTrip: a container-level policy and restartPolicyRules
// (ContainerRestartRules, RestartAllContainers) survive v1 → api → v1.
func TestRestartRulesRoundTrip(t *testing.T) {
	in := corev1.PodSpec{
		RestartPolicy:  corev1.RestartPolicyNever,
		InitContainers: []corev1.Container{{Name: "proxy", Image: "envoy:1", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}},
		Containers: []corev1.Container{{
			Name: "app", Image: "app:1", RestartPolicy: ptr(corev1.ContainerRestartPolicyNever),
			RestartPolicyRules: []corev1.ContainerRestartRule{
				{Action: corev1.ContainerRestartRuleActionRestart, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}},
				{Action: corev1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0, 42}}},
			},
		}},
	}
	spec, err := PodSpecFromV1(&in)
	if err != nil {
		t.Fatal(err)
	}
	app := spec.Main[0]
	if app.RestartPolicy == nil || *app.RestartPolicy != api.RestartNever || len(app.RestartRules) != 2 {
		t.Fatalf("app = %+v", app)
	}
	if r := app.MatchRule(42); r == nil || r.Action != api.RuleRestart {
		t.Errorf("exit 42 matches %+v, want Restart", r)
	}
	if r := app.MatchRule(7); r == nil || r.Action != api.RuleRestartAllContainers {
		t.Errorf("exit 7 matches %+v, want RestartAllContainers", r)
	}
	if r := app.MatchRule(0); r != nil {
		t.Errorf("exit 0 matches %+v, want no rule", r)
	}
	back := PodSpecToV1(spec)
	got := back.Containers[0]
	if *got.RestartPolicy != corev1.ContainerRestartPolicyNever || len(got.RestartPolicyRules) != 2 ||
		got.RestartPolicyRules[1].Action != corev1.ContainerRestartRuleActionRestartAllContainers ||
		got.RestartPolicyRules[1].ExitCodes.Operator != corev1.ContainerRestartRuleOnExitCodesOpNotIn {
		t.Errorf("round trip = %+v", got)
	}
}
