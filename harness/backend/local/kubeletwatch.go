package local

import (
	"context"
	"fmt"
	"time"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/localcluster"
)

// watchKubelets records a kubelet process that exits during the trial
// without a fault stopping it (a crash of its own, such as kubelet
// v1.37.2's panic on an in-place resize with cgroupsPerQOS off: every
// kubelet of a fault-resize trial died that way and the trial passed with
// no finding and no trace of it). Until ctx ends.
func (tr *trial) watchKubelets(ctx context.Context) {
	for k := range tr.b.cl.Nodes {
		go func() {
			pid, exited := tr.b.cl.KubeletProcess(k)
			for exited != nil {
				select {
				case <-exited:
				case <-ctx.Done():
					return
				}
				if tr.kubeletExited(k) {
					return // down for the rest of the trial
				}
				// A fault stopped it; watch the process it starts again.
				for ctx.Err() == nil {
					if p, ch := tr.b.cl.KubeletProcess(k); p != pid && ch != nil {
						pid, exited = p, ch
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
}

// kubeletExited handles the exit of node k's kubelet process: false if a
// fault stopped it (the node is marked down or shutting down), else it
// writes kubelet.down with why (the panic its log ends with) and marks
// the node's kubelet down, so that the faults that need it are not
// applied.
func (tr *trial) kubeletExited(k int) bool {
	ns := tr.b.node[k]
	ns.mu.Lock()
	if ns.kubeletDown || ns.shutdown != nil {
		ns.mu.Unlock()
		return false
	}
	ns.kubeletDown = true
	ns.mu.Unlock()
	n := tr.b.cl.Nodes[k]
	why := "the kubelet process exited without a fault (log " + n.Log + ")"
	if p := localcluster.KubeletPanic(n.Log); p != "" {
		why = "the kubelet panicked: " + p + " (log " + n.Log + ")"
	}
	fmt.Fprintf(tr.b.opts.Log, "local: %s: %s\n", n.Name, why)
	tr.emit(history.Event{Kind: history.KubeletDown, Node: n.Name, Msg: why})
	return true
}
