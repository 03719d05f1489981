package cli

import "github.com/spf13/cobra"

// examples are every command's Examples, by command path (a test checks
// that no command lacks one).
var examples = map[string]string{
	"sidebench": `  # Check a scenario, run it on the embedded simulator, look at the report
  sidebench validate scenarios/policy-comparison.yaml
  sidebench run --out /tmp/pc scenarios/policy-comparison.yaml
  xdg-open /tmp/pc/report.html`,
	"sidebench run": `  # Every shipped scenario on the simulator (what make run does)
  sidebench run scenarios/*.yaml

  # One scenario, 20 trials, 4 at a time, into a chosen directory
  sidebench run --trials 20 --parallel 4 --out /tmp/pc scenarios/policy-comparison.yaml

  # Real kubelets on loopback (root), and the same seeds on sim and local side by side
  sudo sidebench run --backend local scenarios/local-start-ordering.yaml
  sudo sidebench run --backend sim,local --out /tmp/diff scenarios/local-kubelet-crash.yaml`,
	"sidebench soak": `  # Eight hours of fresh seeds, checkpointed every 5 minutes, within 5 GB
  sidebench soak --duration 8h --max-disk 5GB --out /tmp/soak scenarios/soak-profile.yaml

  # After a crash or SIGKILL: continue, counting nothing twice
  sidebench soak --resume /tmp/soak`,
	"sidebench validate": `  sidebench validate scenarios/*.yaml
  sidebench validate my-scenario.yaml   # errors name FILE:LINE:COL and the field`,
	"sidebench check": `  # Re-check a run's recorded histories offline (exit 1 on a violation)
  sidebench check /tmp/pc
  sidebench check /tmp/pc/history.jsonl.zst`,
	"sidebench merge": `  # A run in four shards (on four machines, or an Indexed Job), pooled
  for i in 0 1 2 3; do sidebench run --shard $i/4 --out /tmp/shard-$i scenarios/policy-comparison.yaml; done
  sidebench merge --out /tmp/pc /tmp/shard-0 /tmp/shard-1 /tmp/shard-2 /tmp/shard-3`,
	"sidebench trend": `  # Every night's soak in one directory: the trend beside them, exit 1 on a regression
  sidebench trend /results/nightly

  # Named nights, the trend written elsewhere
  sidebench trend --out /tmp/trend /tmp/night-1 /tmp/night-2 /tmp/night-3`,
	"sidebench explain": `  # The pods with findings, then one of them as a timeline
  sidebench explain /tmp/pc
  sidebench explain /tmp/pc --pod default/web-3 --trial 2 --policy kep753-2019`,
	"sidebench compare": `  # Before and after a change, same scenario and seed: a paired comparison
  sidebench run --seed 1 --out /tmp/a scenarios/policy-comparison.yaml
  sidebench run --seed 1 --out /tmp/b scenarios/policy-comparison.yaml
  sidebench compare /tmp/a /tmp/b

  # The sidecar overhead: none against kep753 in one run
  sidebench compare --policy-a none --policy-b kep753 /tmp/a /tmp/a`,
	"sidebench graduate": `  sidebench graduate --criteria beta /tmp/soak
  sidebench graduate --criteria ga --format json /tmp/soak-1 /tmp/soak-2`,
	"sidebench init": `  # A scenario around a Pod or Deployment you run today
  sidebench init my-app.yaml --from deployment.yaml
  kubectl get pod web-0 -o yaml | sidebench init web.yaml --from -

  # A skeleton with an example pod template
  sidebench init my-scenario.yaml`,
	"sidebench version": `  sidebench version`,
	"sidebench cluster": `  sudo sidebench cluster build
  sudo sidebench cluster up --nodes 3
  sidebench cluster status
  sudo sidebench cluster down`,
	"sidebench cluster build":  `  sudo sidebench cluster build`,
	"sidebench cluster up":     `  sudo sidebench cluster up --nodes 3`,
	"sidebench cluster status": `  sidebench cluster status`,
	"sidebench cluster down": `  sudo sidebench cluster down        # every cluster whose sidebench process has exited (not --keep ones)
  sudo sidebench cluster down DIR    # one cluster, by the directory 'cluster status' lists`,
	"sidebench completion": `  source <(sidebench completion bash)
  sidebench completion zsh > "${fpath[1]}/_sidebench"
  sidebench completion fish > ~/.config/fish/completions/sidebench.fish`,
	"sidebench completion bash":       `  source <(sidebench completion bash)`,
	"sidebench completion zsh":        `  sidebench completion zsh > "${fpath[1]}/_sidebench"`,
	"sidebench completion fish":       `  sidebench completion fish > ~/.config/fish/completions/sidebench.fish`,
	"sidebench completion powershell": `  sidebench completion powershell | Out-String | Invoke-Expression`,
}

// setExamples fills every command's Example from examples.
func setExamples(c *cobra.Command) {
	if e, ok := examples[c.CommandPath()]; ok && c.Example == "" {
		c.Example = e
	}
	for _, sub := range c.Commands() {
		setExamples(sub)
	}
}
