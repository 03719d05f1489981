package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func writePNG(t *testing.T, img image.Image) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "x.png")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBlankAndNot(t *testing.T) {
	blank := image.NewRGBA(image.Rect(0, 0, 100, 100))
	for i := range blank.Pix {
		blank.Pix[i] = 0xff
	}
	var out, errb bytes.Buffer
	if code := run([]string{writePNG(t, blank)}, &out, &errb); code != 1 {
		t.Errorf("blank image: exit %d, want 1", code)
	}
	drawn := image.NewRGBA(image.Rect(0, 0, 100, 100))
	copy(drawn.Pix, blank.Pix)
	for y := 10; y < 40; y++ {
		for x := 0; x < 100; x++ {
			drawn.Set(x, y, color.RGBA{0, 0x72, 0xb2, 0xff})
		}
	}
	if code := run([]string{writePNG(t, drawn)}, &out, &errb); code != 0 {
		t.Errorf("drawn image: exit %d, want 0 (%s)", code, errb.String())
	}
	if code := run(nil, &out, &errb); code != 2 {
		t.Errorf("no args: exit %d, want 2", code)
	}
}
