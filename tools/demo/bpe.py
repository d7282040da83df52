"""Byte-level BPE (GPT-2/BART style) for Florence-2 prompts and answers, in plain Python.

Uses resources/florence2/vocab.json and merges.txt. Florence-2's added tokens (<loc_N> = 50269+N,
<s>, </s>, <pad>, task tokens) are matched first; the text around them is BPE-encoded on its own.
"""
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
RES = os.path.normpath(os.path.join(HERE, "..", "..", "resources", "florence2"))
PAT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")
EXTRA = ["<od>", "</od>", "<ocr>", "</ocr>"] + [f"<loc_{i}>" for i in range(1000)] + [
    "<cap>", "</cap>", "<ncap>", "</ncap>", "<dcap>", "</dcap>", "<grounding>", "</grounding>",
    "<seg>", "</seg>", "<sep>", "<region_cap>", "</region_cap>", "<region_to_desciption>",
    "</region_to_desciption>", "<proposal>", "</proposal>", "<poly>", "</poly>", "<and>"]
LOC0 = 50269


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


class Tokenizer:
    def __init__(self, res=RES):
        with open(os.path.join(res, "vocab.json"), encoding="utf-8") as f:
            self.vocab = json.load(f)
        with open(os.path.join(res, "merges.txt"), encoding="utf-8") as f:
            lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#version")]
        self.ranks = {tuple(l.split(" ")): i for i, l in enumerate(lines)}
        self.added = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 50264}
        for i, t in enumerate(EXTRA):
            self.added[t] = 50265 + i
        self.inv = {v: k for k, v in self.vocab.items()}
        for k, v in self.added.items():
            self.inv[v] = k
        self.b2u = bytes_to_unicode()
        self.u2b = {v: k for k, v in self.b2u.items()}
        self.split_re = re.compile("(" + "|".join(re.escape(t) for t in sorted(self.added, key=len, reverse=True)) + ")")
        self.cache = {}

    def bpe(self, word):
        if word in self.cache:
            return self.cache[word]
        parts = list(word)
        while len(parts) > 1:
            best = None
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2:]
        ids = [self.vocab.get(p, 3) for p in parts]
        self.cache[word] = ids
        return ids

    def encode_text(self, text):
        ids = []
        for piece in PAT.findall(text):
            ids.extend(self.bpe("".join(self.b2u[b] for b in piece.encode("utf-8"))))
        return ids

    def encode(self, text):
        """Added tokens first, BPE for the rest (no <s>/</s> around)."""
        ids = []
        for chunk in self.split_re.split(text):
            if not chunk:
                continue
            if chunk in self.added:
                ids.append(self.added[chunk])
            else:
                ids.extend(self.encode_text(chunk))
        return ids

    def prompt(self, text):
        return [0] + self.encode(text) + [2]

    def decode(self, ids):
        out = []
        buf = []
        for i in ids:
            if i in self.added:
                if buf:
                    out.append(bytearray(self.u2b[c] for c in "".join(buf)).decode("utf-8", "replace"))
                    buf = []
                out.append(self.inv[i])
            else:
                buf.append(self.inv.get(i, ""))
        if buf:
            out.append(bytearray(self.u2b[c] for c in "".join(buf)).decode("utf-8", "replace"))
        return "".join(out)


if __name__ == "__main__":
    ref = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "data", "florence2-tiny-random", "reference.json")))
    tok = Tokenizer()
    ok = True
    for task, t in ref["tasks"].items():
        mine = tok.prompt(t["prompt"])
        good = mine == t["input_ids"]
        ok &= good
        print(task, "OK" if good else f"MISMATCH {mine} != {t['input_ids']}")
        gen = tok.decode(t["generated"])
        if gen != t["text"]:
            print("  decode mismatch", gen, t["text"])
    print("all ok" if ok else "FAILED")
