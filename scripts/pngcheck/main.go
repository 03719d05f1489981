// Command pngcheck fails if a PNG looks blank: it decodes the image and
// requires enough pixels that differ from the dominant (background) colour
// and a minimum luminance spread. It is used by scripts/screenshot-report.sh
// to check that a headless-browser screenshot of report.html rendered.
//
//	go run ./scripts/pngcheck [-min-fraction 0.01] [-min-stddev 8] FILE.png
package main

import (
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Stats describes an image's pixel variety.
type Stats struct {
	W, H int
	// NonBackground is the fraction of pixels whose colour differs from
	// the most common colour.
	NonBackground float64
	// StdDev is the standard deviation of luminance (0–255).
	StdDev float64
	Colors int
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pngcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	minFrac := fs.Float64("min-fraction", 0.01, "minimum fraction of non-background pixels")
	minStd := fs.Float64("min-stddev", 8, "minimum luminance standard deviation (0-255)")
	rows := fs.Int("rows", 0, "check only the top ROWS pixel rows (e.g. a report's verdict banner); 0: the whole image")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: pngcheck [-min-fraction F] [-min-stddev S] [-rows N] FILE.png")
		return 2
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "pngcheck:", err)
		return 1
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		fmt.Fprintln(stderr, "pngcheck: decode:", err)
		return 1
	}
	if *rows > 0 {
		b := img.Bounds()
		if sub, ok := img.(interface {
			SubImage(image.Rectangle) image.Image
		}); ok {
			img = sub.SubImage(image.Rect(b.Min.X, b.Min.Y, b.Max.X, min(b.Min.Y+*rows, b.Max.Y)))
		}
	}
	s := Measure(img)
	fmt.Fprintf(stdout, "pngcheck: %s: %dx%d, %d colours, %.2f%% non-background, luminance stddev %.1f\n",
		fs.Arg(0), s.W, s.H, s.Colors, 100*s.NonBackground, s.StdDev)
	if s.NonBackground < *minFrac || s.StdDev < *minStd {
		fmt.Fprintf(stderr, "pngcheck: %s looks blank (need >= %.2f%% non-background and stddev >= %.1f)\n", fs.Arg(0), 100**minFrac, *minStd)
		return 1
	}
	return 0
}

// Measure computes Stats of img.
func Measure(img image.Image) Stats {
	b := img.Bounds()
	s := Stats{W: b.Dx(), H: b.Dy()}
	n := s.W * s.H
	if n == 0 {
		return s
	}
	counts := map[uint32]int{}
	var sum, sumSq float64
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			key := (r>>8)<<24 | (g>>8)<<16 | (bl>>8)<<8 | a>>8
			counts[key]++
			l := (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(bl)) / 257
			sum += l
			sumSq += l * l
		}
	}
	top := 0
	for _, c := range counts {
		top = max(top, c)
	}
	s.Colors = len(counts)
	s.NonBackground = float64(n-top) / float64(n)
	mean := sum / float64(n)
	s.StdDev = math.Sqrt(max(sumSq/float64(n)-mean*mean, 0))
	return s
}
