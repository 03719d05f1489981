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

// TestTopRows: -rows checks the top of the page alone (a report's banner):
// a drawing lower down does not make a blank top pass.
func TestTopRows(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 100, 1000))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	for y := 600; y < 900; y++ {
		for x := 0; x < 100; x++ {
			img.Set(x, y, color.RGBA{0, 0x72, 0xb2, 0xff})
		}
	}
	p := writePNG(t, img)
	var out, errb bytes.Buffer
	if code := run([]string{p}, &out, &errb); code != 0 {
		t.Errorf("whole image: exit %d", code)
	}
	if code := run([]string{"-rows", "400", p}, &out, &errb); code != 1 {
		t.Errorf("blank top 400 rows: exit %d, want 1", code)
	}
	if code := run([]string{"-rows", "1000", p}, &out, &errb); code != 0 {
		t.Errorf("-rows covering the drawing: exit %d", code)
	}
}
