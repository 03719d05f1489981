package sim

import (
	"bytes"
	"context"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

func detConfig() *Config {
	cfg := benchConfig(300, 100)
	faultLoad(cfg)
	// A denser fault load, so that every kind fires in a short run.
	for i := range cfg.Faults {
		if cfg.Faults[i].When.Rate > 0 {
			cfg.Faults[i].When.Rate *= 20
		}
	}
	return cfg
}

func TestDeterminism(t *testing.T) {
	cfg := detConfig()
	a, resA := encode(t, cfg, 42)
	b, resB := encode(t, cfg, 42)
	if !bytes.Equal(a, b) {
		t.Fatalf("same seed, different histories (%d vs %d bytes)", len(a), len(b))
	}
	if resA != resB {
		t.Fatalf("same seed, different results:\n%+v\n%+v", resA, resB)
	}
	if resA.FaultsFired == 0 || resA.FaultsApplied == 0 {
		t.Fatalf("fault load did not fire: %+v", resA)
	}
	c, _ := encode(t, cfg, 43)
	if bytes.Equal(a, c) {
		t.Fatal("different seeds, identical histories")
	}
	t.Logf("seed 42: %d bytes, %+v", len(a), resA)
}

// TestTrialsMerge: RunTrials with 2 workers and one shared sink gives the
// sequential concatenation of the trials' histories.
func TestTrialsMerge(t *testing.T) {
	cfg := detConfig()
	seeds := []uint64{7, 8, 9}
	var want bytes.Buffer
	for i, s := range seeds {
		w := history.NewWriter(&want)
		if _, err := run(context.Background(), cfg, s, i, w); err != nil {
			t.Fatal(err)
		}
		w.Flush()
	}
	var got bytes.Buffer
	w := history.NewWriter(&got)
	res, err := RunTrials(context.Background(), cfg, seeds, 2, func(int) history.Sink { return w })
	if err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if len(res) != 3 || res[1].Seed != 8 {
		t.Fatalf("results: %+v", res)
	}
	if !bytes.Equal(want.Bytes(), got.Bytes()) {
		t.Fatalf("merged history differs from sequential (%d vs %d bytes)", got.Len(), want.Len())
	}
}

func TestCancel(t *testing.T) {
	cfg := benchConfig(5000, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, cfg, 1, history.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial || res.PodsRemoved == 5000 {
		t.Fatalf("want a partial run, got %+v", res)
	}
}
