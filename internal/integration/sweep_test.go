package integration

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/check"
)

// sweepShape is one variation of the mixed-fault pod (sidecarPod with
// mixedBehaviors): an edit of the base text, and what else of the
// workload, cluster and faults it changes.
type sweepShape struct {
	name, policy string
	// arrival and lifetime replace the workload's (Poisson 300/s, 2-6 s)
	// for shapes whose pods live longer.
	arrival, lifetime string
	// completion makes the workload Job-style: its mains run this long and
	// exit 0, and its pods are not deleted (no lifetime).
	completion string
	// nodes and perNode replace the cluster's 50 nodes of 30 pods.
	nodes, perNode int
	// faults are added to the catalogue's.
	faults string
	edit   func(string) string
	// reaches, when set, says what a 20,000-lifecycle trial of the shape
	// failed to reach ("" when it reached its corner), so that a shape
	// cannot silently stop exercising what it is for.
	reaches func(outcome) string
}

// sweepShapes each reach kubelet corners the base shape does not: Job-like
// mains, grace 0 and 1 s, a second main, a sidecar with every probe and
// hook, a critical pod, restart rules and resets from a main and from a
// sidecar, and the rest below; kitchenSink composes several.
var sweepShapes = []sweepShape{
	{name: "base", edit: func(p string) string { return p }},
	{name: "never-job", edit: func(p string) string {
		p = insertAfter(p, "terminationGracePeriodSeconds: 20", "\n      restartPolicy: Never")
		return strings.Replace(p, "    app: {postStart: 100ms,", "    app: {runTime: 2s, postStart: 100ms,", 1)
	}},
	{name: "onfailure-job", edit: func(p string) string {
		p = insertAfter(p, "terminationGracePeriodSeconds: 20", "\n      restartPolicy: OnFailure")
		return strings.Replace(p, "    app: {postStart: 100ms, attempts: [{postStartFails: true}]}",
			"    app: {runTime: 2s, exitCode: 1, attempts: [{runTime: 1s, exitCode: 3}, {runTime: 1s, exitCode: 0}]}", 1)
	}},
	{name: "grace-1s", edit: func(p string) string {
		return strings.Replace(p, "terminationGracePeriodSeconds: 20", "terminationGracePeriodSeconds: 1", 1)
	}},
	{name: "grace-0", edit: func(p string) string {
		return strings.Replace(p, "terminationGracePeriodSeconds: 20", "terminationGracePeriodSeconds: 0", 1)
	}},
	{name: "two-mains", edit: func(p string) string {
		return insertAfter(p, "      containers:\n", "      - name: worker\n        image: worker:1\n        livenessProbe: {exec: {command: [ok]}, periodSeconds: 1}\n")
	}},
	{name: "sidecar-probes", edit: func(p string) string {
		return insertAfter(p, "      - name: logs\n        image: fluent:1\n        restartPolicy: Always\n",
			"        livenessProbe: {exec: {command: [ok]}, periodSeconds: 1, failureThreshold: 1}\n"+
				"        readinessProbe: {exec: {command: [ok]}, periodSeconds: 1}\n        lifecycle: {postStart: {exec: {command: [warm]}}, preStop: {exec: {command: [drain]}}}\n")
	}},
	{name: "critical", edit: func(p string) string {
		return insertAfter(p, "terminationGracePeriodSeconds: 20", "\n      priorityClassName: system-node-critical")
	}},
	{name: "rules-main", policy: bothGates, edit: func(p string) string {
		p = insertAfter(p, "        lifecycle: {postStart: {exec: {command: [warm]}}}\n",
			"        restartPolicy: OnFailure\n        restartPolicyRules:\n"+
				"        - {action: Restart, exitCodes: {operator: In, values: [42]}}\n        - {action: RestartAllContainers, exitCodes: {operator: In, values: [88]}}\n")
		return strings.Replace(p, "    app: {postStart: 100ms, attempts: [{postStartFails: true}]}",
			"    app: {runTime: 1500ms, exitCode: 88, postStart: 100ms, attempts: [{postStartFails: true}, {runTime: 1s, exitCode: 42}]}", 1)
	}},
	// A kill that outlives its grace: the last sidecar ignores SIGTERM, a
	// third sidecar's preStop hangs, 3 s of grace.
	{name: "grace-expiry", edit: func(p string) string {
		p = strings.Replace(p, "terminationGracePeriodSeconds: 20", "terminationGracePeriodSeconds: 3", 1)
		p = strings.Replace(p, "      containers:\n", "      - name: mesh\n        image: mesh:1\n        restartPolicy: Always\n"+
			"        lifecycle: {preStop: {exec: {command: [drain]}}}\n      containers:\n", 1)
		p = strings.Replace(p, "    logs: {attempts:", "    logs: {termHandling: never, attempts:", 1)
		return p + "    mesh: {preStop: never}\n"
	}},
	// Crash loops long enough for the backoff to grow: pods live 30-90 s,
	// the sidecar and the main crash every few seconds.
	{name: "crashloop", arrival: "{type: poisson, rate: 15}", lifetime: "uniform(min=30s, max=90s)", edit: func(p string) string {
		p = strings.Replace(p, "    logs: {attempts:", "    logs: {crashMTBF: 4s, attempts:", 1)
		return strings.Replace(p, "    app: {postStart: 100ms,", "    app: {crashMTBF: 10s, postStart: 100ms,", 1)
	}},
	// A Job whose sidecar crash-loops while the main runs to completion.
	{name: "job-sidecar-crash", arrival: "{type: poisson, rate: 100}", lifetime: "uniform(min=20s, max=40s)", edit: func(p string) string {
		p = insertAfter(p, "terminationGracePeriodSeconds: 20", "\n      restartPolicy: OnFailure")
		p = strings.Replace(p, "    logs: {attempts:", "    logs: {crashMTBF: 2s, attempts:", 1)
		return strings.Replace(p, "    app: {postStart: 100ms,", "    app: {runTime: 8s, postStart: 100ms,", 1)
	}},
	// A regular init between the sidecars, failing its first run.
	{name: "interleaved", edit: func(p string) string {
		p = strings.Replace(p, "      - name: logs\n", "      - name: migrate\n        image: migrate:1\n      - name: logs\n", 1)
		return p + "    migrate: {runTime: 300ms, attempts: [{runTime: 200ms, exitCode: 1}]}\n"
	}},
	// A Never pod whose regular init is retried by a rule on exit 42.
	{name: "init-rules", policy: bothGates, edit: func(p string) string {
		p = insertAfter(p, "terminationGracePeriodSeconds: 20", "\n      restartPolicy: Never")
		p = strings.Replace(p, "      - name: logs\n", "      - name: migrate\n        image: migrate:1\n        restartPolicy: Never\n"+
			"        restartPolicyRules:\n        - {action: Restart, exitCodes: {operator: In, values: [42]}}\n      - name: logs\n", 1)
		p = strings.Replace(p, "    app: {postStart: 100ms,", "    app: {runTime: 3s, postStart: 100ms,", 1)
		return p + "    migrate: {runTime: 300ms, attempts: [{runTime: 200ms, exitCode: 42}, {runTime: 200ms, exitCode: 42}]}\n"
	}},
	// Faults at the worst moments, often: kubelet crashes during pod kills
	// and during the recovery of a crash, runtime restarts that kill
	// containers while pods terminate, readiness failures of a sidecar.
	{name: "harsh", faults: `
- {name: crash-in-kill, type: kubelet-crash, downtime: 1s, schedule: {type: on-phase, phase: terminating, delay: 300ms, probability: 0.2}}
- {name: crash-twice, type: kubelet-crash, downtime: 2s, recoveryCrash: true, schedule: {type: poisson, rate: 0.05}, target: {nodeCount: 1}}
- {name: runtime-in-kill, type: runtime-restart, mode: kill-containers, downtime: 1s, schedule: {type: on-phase, phase: terminating, delay: 100ms, probability: 0.05}}
- {name: ready-proxy, type: probe-failure, probe: readiness, window: 2s, schedule: {type: poisson, rate: 0.5}, target: {container: proxy, podCount: 1}}
`, edit: func(p string) string {
		return insertAfter(p, "        startupProbe: {exec: {command: [ok]}, periodSeconds: 1}\n",
			"        readinessProbe: {exec: {command: [ok]}, periodSeconds: 1}\n")
	}},
	// Kills after a failed postStart that the runtime refuses: the
	// sidecar's and the main's first postStart fail while a runtime
	// restart (containers kept) is under way, so the kill that follows
	// fails and the kubelet forgets the hook (poststart_kill_stop_failed.txt).
	{name: "hook-kill-refused", faults: `
- {name: runtime-in-proxy-hook, type: runtime-restart, mode: keep-containers, downtime: 1s, schedule: {type: on-container, container: proxy, event: running, delay: 100ms, probability: 0.05}}
- {name: runtime-in-app-hook, type: runtime-restart, mode: keep-containers, downtime: 1s, schedule: {type: on-container, container: app, event: running, delay: 50ms, probability: 0.05}}
`, edit: func(p string) string {
		p = strings.Replace(p, "        lifecycle: {preStop: {exec: {command: [drain]}}}\n        resources: {requests: {cpu: 50m",
			"        lifecycle: {postStart: {exec: {command: [warm]}}, preStop: {exec: {command: [drain]}}}\n        resources: {requests: {cpu: 50m", 1)
		return strings.Replace(p, "    proxy: {startupAfter: 1s, preStop: 500ms, preStopFails: true}",
			"    proxy: {startupAfter: 1s, preStop: 500ms, preStopFails: true, postStart: 300ms, attempts: [{postStartFails: true}]}", 1)
	}},
	// Kills the runtime refuses mid-way: a runtime restart (containers
	// kept) 100 ms into the sidecar's preStop, whether its liveness probe
	// or the pod's deletion began the kill, so the StopContainer after
	// the hook fails; the kubelet decides a probe kill again with a new
	// killContainer (poststart_kill_stop_failed.txt) and retries a pod
	// kill.
	{name: "prestop-runtime", faults: `
- {name: live-proxy, type: probe-failure, probe: liveness, window: 2s, schedule: {type: poisson, rate: 5}, target: {container: proxy, podCount: 1}}
- {name: runtime-in-prestop, type: runtime-restart, mode: keep-containers, downtime: 1s, schedule: {type: on-container, container: proxy, event: prestop-begin, delay: 100ms, probability: 0.2}}
`, edit: func(p string) string {
		return insertAfter(p, "        startupProbe: {exec: {command: [ok]}, periodSeconds: 1}\n",
			"        livenessProbe: {exec: {command: [ok]}, periodSeconds: 1, failureThreshold: 1}\n")
	}},
	// The runtime goes down while pods are being killed: StopContainer,
	// preStop hooks and then StopPodSandbox are refused; the sidecars wait
	// out their grace for a main whose stop was refused, the sandbox stop
	// SIGKILLs what is left, or the kill runs again with its whole grace
	// (killPodWithSyncResult; the reference's pod_kill_stop_refused.txt).
	{name: "pod-kill-refused", faults: runtimeInKills, edit: mainPreStop, reaches: func(o outcome) string {
		if o.refusedInKill == 0 || o.killRetries == 0 {
			return fmt.Sprintf("%d pods with a refused stop in a pod kill, %d with a kill run again", o.refusedInKill, o.killRetries)
		}
		return ""
	}},
	// The same for Jobs: the kill that stops the sidecars once the main
	// completed (KillPodCompleted) meets a runtime that is down, so the
	// sidecars outlive the Job until the sandbox stop or the kill run
	// again ends them (INV-C1).
	{name: "completion-refused", completion: "uniform(min=1s, max=4s)", faults: runtimeInKills, edit: func(p string) string {
		return insertAfter(p, "terminationGracePeriodSeconds: 20", "\n      restartPolicy: OnFailure")
	}, reaches: func(o outcome) string {
		// hiddenExits: mains completing while the runtime is down, heard
		// with whatever else exited at its return (relist_after_runtime_down.txt).
		if o.refusedInKill == 0 || o.killRetries == 0 || o.hiddenExits == 0 {
			return fmt.Sprintf("%d pods with a refused stop in a pod kill, %d with a kill run again, %d with an exit the runtime's outage hid", o.refusedInKill, o.killRetries, o.hiddenExits)
		}
		return ""
	}},
	// Graceful node shutdowns five times as often, with the runtime going
	// down in the kills they begin (KillNodeShutdown: the pod's grace
	// capped by shutdownGracePeriod, the node off at its end).
	{name: "shutdown-refused", faults: runtimeInKills + `
- {name: shutdown-often, type: node-shutdown, return: true, shutdownGracePeriod: 20s, shutdownGracePeriodCriticalPods: 5s, schedule: {type: poisson, rate: 0.1}, target: {nodeCount: 1}, downtime: 5s}
- {name: runtime-in-kill-4s, type: runtime-restart, mode: keep-containers, downtime: 4s, schedule: {type: on-phase, phase: terminating, delay: 300ms, probability: 0.05}}
`, edit: mainPreStop, reaches: func(o outcome) string {
		if o.refusedInShutdown == 0 {
			return "no pod with a refused stop in a node shutdown's kill"
		}
		return ""
	}},
	// Probe timing: initial delays, periods of 2 s, success and failure
	// thresholds above 1, a main's readiness that fails in windows and a
	// sidecar's startup probe whose first run comes after its delay.
	{name: "probe-timing", faults: `
- {name: ready-app, type: probe-failure, probe: readiness, window: 3s, schedule: {type: poisson, rate: 1}, target: {container: app, podCount: 1}}
`, edit: func(p string) string {
		p = strings.Replace(p, "        startupProbe: {exec: {command: [ok]}, periodSeconds: 1}\n",
			"        startupProbe: {exec: {command: [ok]}, initialDelaySeconds: 1, periodSeconds: 2, failureThreshold: 3}\n", 1)
		p = strings.Replace(p, "        readinessProbe: {exec: {command: [ok]}, periodSeconds: 1}\n        livenessProbe: {exec: {command: [ok]}, periodSeconds: 1, terminationGracePeriodSeconds: 5}\n",
			"        readinessProbe: {exec: {command: [ok]}, initialDelaySeconds: 1, periodSeconds: 2, successThreshold: 2, failureThreshold: 2}\n"+
				"        livenessProbe: {exec: {command: [ok]}, initialDelaySeconds: 2, periodSeconds: 2, failureThreshold: 2, terminationGracePeriodSeconds: 5}\n", 1)
		return strings.Replace(p, "    app: {postStart: 100ms,", "    app: {readyAfter: \"uniform(min=0s, max=3s)\", postStart: 100ms,", 1)
	}},
	// Hooks that hang: the main's first postStart never returns (it is
	// never Started, nothing after it starts), the sidecar's preStop hangs
	// until the grace cuts it.
	{name: "hanging-hooks", edit: func(p string) string {
		p = strings.Replace(p, "    app: {postStart: 100ms, attempts: [{postStartFails: true}]}",
			"    app: {postStart: 100ms, attempts: [{postStart: never}]}", 1)
		return strings.Replace(p, "    proxy: {startupAfter: 1s, preStop: 500ms, preStopFails: true}",
			"    proxy: {startupAfter: 1s, preStop: never}", 1)
	}},
	// Memory: the sidecar grows to its limit and is OOM-killed every few
	// seconds; the main's liveness starts failing after 3 s.
	{name: "oom-growth", lifetime: "uniform(min=5s, max=15s)", arrival: "{type: poisson, rate: 150}", edit: func(p string) string {
		p = strings.Replace(p, "    proxy: {startupAfter: 1s, preStop: 500ms, preStopFails: true}",
			"    proxy: {startupAfter: 1s, preStop: 500ms, preStopFails: true, memoryGrowth: 16000000, memoryLimit: 64000000}", 1)
		return strings.Replace(p, "    app: {postStart: 100ms,", "    app: {livenessFailAfter: 3s, postStart: 100ms,", 1)
	}},
	// A startup probe that gives up: the sidecar needs 2-4 s, the probe
	// allows 2 failures 1 s apart, so many attempts are startup-killed.
	{name: "startup-kills", edit: func(p string) string {
		p = strings.Replace(p, "        startupProbe: {exec: {command: [ok]}, periodSeconds: 1}\n",
			"        startupProbe: {exec: {command: [ok]}, periodSeconds: 1, failureThreshold: 2}\n", 1)
		return strings.Replace(p, "    proxy: {startupAfter: 1s,", "    proxy: {startupAfter: \"uniform(min=1s, max=4s)\",", 1)
	}},
	// Deleted almost at once: most pods are killed during initialization,
	// many before a container ran.
	{name: "short-lived", lifetime: "uniform(min=100ms, max=1s)", edit: func(p string) string {
		return strings.Replace(p, "    setup: {runTime: 500ms}", "    setup: {runTime: 300ms}", 1)
	}},
	// Bursts beyond the cluster's capacity: pods wait to be scheduled.
	{name: "bursts", arrival: "{type: burst, size: 2000, every: 8s}", edit: func(p string) string {
		return strings.Replace(p, "    setup: {runTime: 500ms}", "    setup: {runTime: 300ms}", 1)
	}},
	{name: "rules-sidecar", policy: bothGates, edit: sidecarResetsOn77},
	// In-place resizes that restart: the sidecar proxy and the main app
	// restart on a memory resize (resizePolicy RestartContainer), often.
	{name: "resize-restart", faults: `
- {name: resize-app-mem, type: resize, resources: {requests: {memory: 192Mi}}, schedule: {type: poisson, rate: 0.5}, target: {container: app, podCount: 1}}
- {name: resize-proxy-mem, type: resize, resources: {requests: {memory: 40Mi}}, schedule: {type: poisson, rate: 0.5}, target: {container: proxy, podCount: 1}}
`, edit: func(p string) string {
		p = strings.Replace(p, "        resources: {requests: {cpu: 50m, memory: 32Mi}, limits: {cpu: 100m, memory: 64Mi}}\n",
			"        resources: {requests: {cpu: 50m, memory: 32Mi}, limits: {cpu: 100m, memory: 64Mi}}\n"+
				"        resizePolicy: [{resourceName: memory, restartPolicy: RestartContainer}]\n", 1)
		return insertAfter(p, "        resources: {requests: {cpu: 200m, memory: 128Mi}}\n",
			"        resizePolicy: [{resourceName: memory, restartPolicy: RestartContainer}]\n")
	}},
	// Five sidecars, each with its own startup probe and preStop, so that
	// start and stop ordering have long chains to break.
	{name: "many-sidecars", edit: func(p string) string {
		var more strings.Builder
		for _, n := range []string{"mesh", "metrics", "vault"} {
			fmt.Fprintf(&more, "      - name: %s\n        image: %s:1\n        restartPolicy: Always\n"+
				"        startupProbe: {exec: {command: [ok]}, periodSeconds: 1}\n        lifecycle: {preStop: {exec: {command: [drain]}}}\n", n, n)
		}
		p = strings.Replace(p, "      containers:\n", more.String()+"      containers:\n", 1)
		return p + "    mesh: {startupAfter: 500ms, preStop: 300ms}\n    metrics: {startupAfter: 200ms, crashMTBF: 8s}\n    vault: {startupAfter: 700ms, preStop: 1s, termHandling: 2s}\n"
	}},
	// Job-style pods that complete (completion.runTime, no deletion): the
	// sidecars must be stopped after the main exits 0 (INV-C1, INV-R6).
	{name: "completion", completion: "uniform(min=1s, max=4s)", edit: func(p string) string {
		return insertAfter(p, "terminationGracePeriodSeconds: 20", "\n      restartPolicy: OnFailure")
	}},
	// The same under Never: a failed main ends the pod Failed, with the
	// sidecars stopped after it (INV-C1, INV-C2).
	{name: "completion-never", completion: "uniform(min=1s, max=4s)", edit: func(p string) string {
		return insertAfter(p, "terminationGracePeriodSeconds: 20", "\n      restartPolicy: Never")
	}},
	// A Never Job whose main is retried by a rule on exit 42 and whose
	// sidecar resets the pod on exit 77 (KEP-5307's use case).
	{name: "completion-rules", policy: bothGates, completion: "uniform(min=1s, max=4s)", edit: func(p string) string {
		p = insertAfter(p, "terminationGracePeriodSeconds: 20", "\n      restartPolicy: Never")
		p = insertAfter(p, "        lifecycle: {postStart: {exec: {command: [warm]}}}\n",
			"        restartPolicy: Never\n        restartPolicyRules:\n"+
				"        - {action: Restart, exitCodes: {operator: In, values: [42]}}\n")
		return sidecarResetsOn77(p)
	}},
	// A deletion whose grace (2 s) overrides the pod's 20 s.
	{name: "delete-grace", edit: func(p string) string {
		return strings.Replace(p, "  template:\n", "  deleteGrace: 2s\n  template:\n", 1)
	}},
	// A regular init that fails three times before it succeeds: the
	// backoff grows inside initialization, then the sidecars after it start.
	{name: "init-crashloop", arrival: "{type: poisson, rate: 15}", lifetime: "uniform(min=30s, max=90s)", edit: func(p string) string {
		return strings.Replace(p, "    setup: {runTime: 500ms}", "    setup: {runTime: 500ms, attempts: [{exitCode: 1}, {exitCode: 1}, {exitCode: 1}]}", 1)
	}},
	// Sidecars that exit on their own: logs exits 0 after a second (a
	// sidecar is restarted whatever its exit), proxy's first postStart
	// hangs, so nothing after it starts until the pod is deleted.
	{name: "sidecar-exits", edit: func(p string) string {
		p = strings.Replace(p, "        lifecycle: {preStop: {exec: {command: [drain]}}}\n",
			"        lifecycle: {postStart: {exec: {command: [warm]}}, preStop: {exec: {command: [drain]}}}\n", 1)
		p = strings.Replace(p, "    logs: {attempts: [{runTime: 1500ms, exitCode: 2}]}", "    logs: {runTime: 1s, exitCode: 0}", 1)
		return strings.Replace(p, "    proxy: {startupAfter: 1s,", "    proxy: {postStart: 100ms, attempts: [{postStart: never}], startupAfter: 1s,", 1)
	}},
	// Three regular inits between two sidecars, the last failing once, and
	// a sidecar liveness probe with its own grace that fails often.
	{name: "interleaved-inits", faults: `
- {name: live-logs, type: probe-failure, probe: liveness, window: 3s, schedule: {type: poisson, rate: 0.5}, target: {container: logs, podCount: 1}}
`, edit: func(p string) string {
		p = strings.Replace(p, "      - name: logs\n        image: fluent:1\n        restartPolicy: Always\n",
			"      - name: migrate\n        image: migrate:1\n      - name: seed\n        image: seed:1\n      - name: logs\n        image: fluent:1\n        restartPolicy: Always\n"+
				"        livenessProbe: {exec: {command: [ok]}, periodSeconds: 1, failureThreshold: 1, terminationGracePeriodSeconds: 2}\n", 1)
		return p + "    migrate: {runTime: 300ms}\n    seed: {runTime: 200ms, attempts: [{exitCode: 3}]}\n"
	}},
	// A Never pod whose sandbox is lost often (runtime restarts that kill
	// containers, power-offs): a new sandbox only while no main has run
	// (INV-F3), else the pod fails.
	{name: "never-sandbox-loss", faults: `
- {name: runtime-kill-often, type: runtime-restart, mode: kill-containers, schedule: {type: poisson, rate: 0.05}, target: {nodeCount: 1}, downtime: 1s}
- {name: poweroff-often, type: node-poweroff, return: true, schedule: {type: poisson, rate: 0.05}, target: {nodeCount: 1}, downtime: 3s}
`, edit: func(p string) string {
		p = insertAfter(p, "terminationGracePeriodSeconds: 20", "\n      restartPolicy: Never")
		return strings.Replace(p, "    app: {postStart: 100ms,", "    app: {runTime: 4s, postStart: 100ms,", 1)
	}},
	// A main with a slow startup probe and liveness, whose image, like
	// every container's, changes often (a regular init's change waits for
	// the next sandbox, a sidecar's or main's restarts it).
	{name: "image-churn", faults: `
- {name: image-app, type: image-change, image: app:2, schedule: {type: poisson, rate: 0.5}, target: {container: app, podCount: 1}}
- {name: image-proxy, type: image-change, image: envoy:3, schedule: {type: poisson, rate: 0.5}, target: {container: proxy, podCount: 1}}
- {name: image-setup, type: image-change, image: busybox:2, schedule: {type: poisson, rate: 0.5}, target: {container: setup, podCount: 1}}
`, edit: func(p string) string {
		p = strings.Replace(p, "        readinessProbe: {exec: {command: [ok]}, periodSeconds: 1}\n        livenessProbe:",
			"        startupProbe: {exec: {command: [ok]}, periodSeconds: 1, failureThreshold: 5}\n        readinessProbe: {exec: {command: [ok]}, periodSeconds: 1}\n        livenessProbe:", 1)
		return strings.Replace(p, "    app: {postStart: 100ms,", "    app: {startupAfter: \"uniform(min=500ms, max=3s)\", postStart: 100ms,", 1)
	}},
	// Five dense nodes (300 pods each): every node fault hits hundreds of
	// pods at once, and kubelet restarts relist them all.
	{name: "dense-nodes", nodes: 5, perNode: 300, edit: func(p string) string {
		return strings.Replace(p, "    setup: {runTime: 500ms}", "    setup: {runTime: 400ms}", 1)
	}},
	// Container GC of every exited record, often, with kubelet crashes in
	// between: records vanish while no kubelet runs.
	{name: "gc-heavy", faults: `
- {name: gc-all, type: container-gc, allExited: true, schedule: {type: every, at: 1s, interval: 2s}, target: {nodeFraction: 1}}
- {name: crash-often, type: kubelet-crash, downtime: 3s, schedule: {type: poisson, rate: 0.2}, target: {nodeCount: 1}}
`, edit: func(p string) string {
		return strings.Replace(p, "    logs: {attempts:", "    logs: {crashMTBF: 3s, attempts:", 1)
	}},
}

// mainPreStop gives the main a preStop hook of 700 ms, so that its
// StopContainer comes after a runtime restart timed into its pod's kill.
func mainPreStop(p string) string {
	p = strings.Replace(p, "        lifecycle: {postStart: {exec: {command: [warm]}}}\n",
		"        lifecycle: {postStart: {exec: {command: [warm]}}, preStop: {exec: {command: [drain]}}}\n", 1)
	return strings.Replace(p, "    app: {postStart: 100ms,", "    app: {postStart: 100ms, preStop: 700ms,", 1)
}

// runtimeInKills are runtime restarts (containers kept) timed into pod
// kills: 1.5 s and 3 s outages, and one of 25 s that outlasts the grace.
const runtimeInKills = `
- {name: runtime-at-kill, type: runtime-restart, mode: keep-containers, downtime: 1500ms, schedule: {type: on-phase, phase: terminating, delay: 100ms, probability: 0.02}}
- {name: runtime-at-kill-0, type: runtime-restart, mode: keep-containers, downtime: 3s, schedule: {type: on-phase, phase: terminating, probability: 0.01}}
- {name: runtime-through-kill, type: runtime-restart, mode: keep-containers, downtime: 25s, schedule: {type: on-phase, phase: terminating, delay: 200ms, probability: 0.002}}
`

// kitchenSink is several shapes at once, under both restart-rule gates:
// a sidecar that resets the pod, a regular init between the sidecars, a
// sidecar with every probe and hook, restarting resizes, a deletion
// grace of 2 s, with the faults of harsh, resize-restart, image-churn and
// gc-heavy together; SIDEBENCH_SWEEP_SINK=a,b,... composes those shapes
// instead. Each edit must still change the text after the ones before it.
func kitchenSink(t *testing.T) sweepShape {
	sink := sweepShape{name: "kitchen-sink", policy: bothGates}
	var edits []func(string) string
	names := []string{"rules-sidecar", "interleaved", "sidecar-probes", "resize-restart", "delete-grace", "harsh", "image-churn", "gc-heavy"}
	if e := os.Getenv("SIDEBENCH_SWEEP_SINK"); e != "" {
		names = strings.Split(e, ",")
	}
	for _, name := range names {
		i := slices.IndexFunc(sweepShapes, func(s sweepShape) bool { return s.name == name })
		if i < 0 {
			t.Fatalf("kitchen-sink: no shape %q", name)
		}
		edits = append(edits, sweepShapes[i].edit)
		sink.faults += sweepShapes[i].faults
	}
	sink.edit = func(p string) string {
		for k, edit := range edits {
			if q := edit(p); q != p {
				p = q
			} else {
				t.Errorf("kitchen-sink: edit %d changed nothing after the ones before it", k)
			}
		}
		return p
	}
	return sink
}

// insertAfter inserts text after the first occurrence of anchor in p: the
// shapes' usual edit, a line added under another.
func insertAfter(p, anchor, text string) string {
	return strings.Replace(p, anchor, anchor+text, 1)
}

// sidecarResetsOn77 gives the pod's sidecar proxy a RestartAllContainers
// rule on exit 77.
func sidecarResetsOn77(p string) string {
	return strings.Replace(p, "        restartPolicy: Always\n        startupProbe:",
		"        restartPolicy: Always\n        restartPolicyRules:\n        - {action: RestartAllContainers, exitCodes: {operator: In, values: [77]}}\n        startupProbe:", 1)
}

const bothGates = "kep753+ContainerRestartRules+RestartAllContainersOnContainerExits"

// sweepFaults add exits that the rules of the rules-* shapes match.
const sweepFaults = `
- {name: kill-77, type: container-kill, exitCode: 77, schedule: {type: poisson, rate: 2}, target: {container: proxy, podCount: 1}}
- {name: kill-88, type: container-kill, exitCode: 88, schedule: {type: poisson, rate: 0.5}, target: {container: app, podCount: 1}}
- {name: kill-42, type: container-kill, exitCode: 42, schedule: {type: poisson, rate: 0.5}, target: {container: app, podCount: 1}}
`

// TestSweepPodShapes is a Jepsen-style search for false positives: every
// sweep shape under every fault of the catalogue, for the reference policy
// (both restart-rule gates on for the rules shapes), must give no
// violation. By default one seed and 20,000 lifecycles a shape (about 40 s of CPU);
// SIDEBENCH_SWEEP_SEEDS=N and SIDEBENCH_SWEEP_LIFECYCLES=M widen it, and
// SIDEBENCH_SWEEP_POLICY runs every shape under one policy. A
// failure prints the scenario, to re-run with `sidebench run --keep-history
// all` and read with `sidebench explain --pod`. Session 9's sweep (5 seeds
// × 20,000 lifecycles) found a checker and a reference bug this way
// (TestShutdownOfAZeroGracePod, restart_all_start_in_flight.txt,
// TestMainRemovedByAResetIsNoSuccess).
func TestSweepPodShapes(t *testing.T) {
	seeds, count := 1, 20_000
	if testing.Short() {
		count = 1_000
	}
	for env, v := range map[string]*int{"SIDEBENCH_SWEEP_SEEDS": &seeds, "SIDEBENCH_SWEEP_LIFECYCLES": &count} {
		if s := os.Getenv(env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				t.Fatalf("%s=%q: want a positive number", env, s)
			}
			*v = n
		}
	}
	shapes := append(slices.Clip(sweepShapes), kitchenSink(t))
	for _, shape := range shapes {
		pod := shape.edit(mixedPod)
		if pod == mixedPod && shape.name != "base" {
			t.Fatalf("shape %s changed nothing: its edit no longer matches the base pod", shape.name)
		}
		policy := cmp.Or(os.Getenv("SIDEBENCH_SWEEP_POLICY"), shape.policy, "kep753")
		for seed := 1; seed <= seeds; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", shape.name, seed), func(t *testing.T) {
				t.Parallel()
				text := oneWorkload{name: "sweep-" + shape.name, seed: seed, policies: policy, nodes: cmp.Or(shape.nodes, 50), perNode: cmp.Or(shape.perNode, 30), count: count,
					arrival: cmp.Or(shape.arrival, "{type: poisson, rate: 300}"), lifetime: cmp.Or(shape.lifetime, "uniform(min=2s, max=6s)"),
					completion: shape.completion, pod: pod, faults: mixedFaults + sweepFaults + shape.faults}.text()
				o := runTrial(t, text, policy, 0)
				if o.pods < count {
					t.Fatalf("only %d lifecycles checked, want %d", o.pods, count)
				}
				if v := o.byID(check.Violation); len(v) > 0 {
					t.Errorf("%d violations [%s]\n%s\nscenario:\n%s", o.rep.Violations(), ids(v), violationsByID(o, 0), text)
				}
				if shape.reaches != nil && count >= 20_000 {
					if miss := shape.reaches(o); miss != "" {
						t.Errorf("shape %s no longer reaches its corner: %s", shape.name, miss)
					}
				}
				kinds := keys(o.faultedBy)
				sort.Strings(kinds)
				t.Logf("%d lifecycles, %d resets, %d refused stops in kills (%d in node shutdowns), %d kills run again, %d exits hidden by a runtime outage, fault kinds %v", o.pods, o.resets, o.refusedInKill, o.refusedInShutdown, o.killRetries, o.hiddenExits, kinds)
			})
		}
	}
}
