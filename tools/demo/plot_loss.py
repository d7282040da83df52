"""Draws loss.csv (from train.py) as a small PNG with PIL, and prints a markdown table.

    /usr/bin/python3 tools/demo/plot_loss.py tools/demo/loss.csv tools/demo/loss.png
"""
import csv
import sys

from PIL import Image, ImageDraw, ImageFont


def main(src, dst, every=250):
    rows = list(csv.DictReader(open(src)))
    steps = [int(r["step"]) for r in rows]
    series = {"token_ce": ([float(r["token_ce"]) for r in rows], (30, 90, 200)),
              "loc_ce": ([float(r["loc_ce"]) for r in rows], (220, 90, 30))}
    W, H, L, R, T, B = 640, 360, 50, 20, 20, 40
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    f = ImageFont.load_default()
    ymax = 8.0
    xmax = max(steps)

    def xy(s, v):
        return (L + (W - L - R) * s / xmax, T + (H - T - B) * (1 - min(v, ymax) / ymax))

    for v in range(0, int(ymax) + 1):
        y = xy(0, v)[1]
        d.line([(L, y), (W - R, y)], fill=(225, 225, 225))
        d.text((L - 20, y - 6), str(v), fill="black", font=f)
    for k in range(0, 6):
        s = xmax * k / 5
        x = xy(s, 0)[0]
        d.text((x - 12, H - B + 6), str(int(s)), fill="black", font=f)
    d.rectangle([L, T, W - R, H - B], outline="black")
    d.text((W // 2 - 20, H - 18), "step", fill="black", font=f)
    for i, (name, (vals, col)) in enumerate(series.items()):
        pts = [xy(s, v) for s, v in zip(steps, vals)]
        d.line(pts, fill=col, width=2)
        d.text((W - R - 150, T + 8 + 14 * i), name, fill=col, font=f)
    img.save(dst)
    print("| step | minutes | lr | loss | token CE | location-token CE |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if int(r["step"]) % every == 0 or r is rows[-1]:
            print(f"| {r['step']} | {float(r['elapsed_s']) / 60:.1f} | {float(r['lr']):.2e} | "
                  f"{float(r['loss']):.3f} | {float(r['token_ce']):.3f} | {float(r['loc_ce']):.3f} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 250)
