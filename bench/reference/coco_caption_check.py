"""coco_caption_check.py: `caption score` against coco-caption's own scorers, to 1e-6.

    /usr/bin/python3 bench/reference/coco_caption_check.py --coco-caption DIR \
        --classpath CP [--refs REFS --results RESULTS | --demo-corpus OUT] [--caption bin/caption]

DIR: a checkout of coco-caption (github tylin/coco-caption). Its BLEU, CIDEr-D and ROUGE-L
scorers (pycocoevalcap/{bleu,cider,rouge}, Python 2) are copied to a temporary folder and
converted with lib2to3; their word split is made Python 2's byte-string split (ASCII white
space only: Python 3's str.split would also split at U+00A0, which PTB puts inside tokens
such as "2 1/2"). The tokens come from PTBTokenizer 3.4.1 (CP: coco-caption's
stanford-corenlp-3.4.1.jar, or classes built from CoreNLP's v3.4.1 tag) run exactly as
pycocoevalcap/tokenizer/ptbtokenizer.py runs it (all captions of a side in one file, one a
line, -preserveLines -lowerCase, then its punctuation filter), on the images of RESULTS
(COCOEvalCap with params['image_id'] = cocoRes.getImgIds()).

--demo-corpus OUT writes OUT/refs.json and OUT/results.json from coco-caption's
results/captions_val2014_fakecap_results.json (1,000 captions; each image gets its own and
four other images' captions as references, with capitals, periods and some punctuation
added; 700 images get a result) and checks those. Exits 1 when a score differs by more than
1e-6. Needs java; not run by make.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

PUNCTUATIONS = ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                ".", "?", "!", ",", ":", "-", "--", "...", ";"]
KEYS = ["bleu1", "bleu2", "bleu3", "bleu4", "cider", "rougeL"]


def load_scorers(coco_dir, work):
    """coco-caption's Bleu, Cider, Rouge classes, converted to Python 3."""
    for name in ("bleu", "cider", "rouge"):
        shutil.copytree(os.path.join(coco_dir, "pycocoevalcap", name), os.path.join(work, name))
    subprocess.run([sys.executable, "-m", "lib2to3", "-w", "-n", "bleu", "cider", "rouge"], cwd=work,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    for path, scorer in (("bleu/bleu.py", "bleu_scorer"), ("cider/cider.py", "cider_scorer")):
        full = os.path.join(work, path)
        text = open(full).read().replace("from ." + scorer, "from " + scorer)
        open(full, "w").write(text)
    for path in ("bleu/bleu_scorer.py", "cider/cider_scorer.py"):
        full = os.path.join(work, path)
        text = open(full).read().replace(
            "words = s.split()", "words = [w.decode('utf-8') for w in s.encode('utf-8').split()]")
        open(full, "w").write(text)
    sys.path[:0] = [os.path.join(work, n) for n in ("bleu", "cider", "rouge")]
    from bleu import Bleu  # noqa: E402
    from cider import Cider  # noqa: E402
    from rouge import Rouge  # noqa: E402
    return Bleu, Cider, Rouge


def ptb_tokenize(classpath, captions_for_image):
    """pycocoevalcap/tokenizer/ptbtokenizer.py's tokenize(), in Python 3."""
    image_id = [k for k, v in captions_for_image.items() for _ in range(len(v))]
    sentences = "\n".join(c["caption"].replace("\n", " ") for v in captions_for_image.values() for c in v)
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(sentences.encode("utf-8"))
    try:
        out = subprocess.run(["java", "-cp", classpath, "edu.stanford.nlp.process.PTBTokenizer",
                              "-preserveLines", "-lowerCase", f.name], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True).stdout
    finally:
        os.remove(f.name)
    final = {}
    for k, line in zip(image_id, out.decode("utf-8").split("\n")):
        words = line.rstrip(" \t\n\r\x0b\x0c").split(" ")  # Python 2's str.rstrip
        final.setdefault(k, []).append(" ".join(w for w in words if w not in PUNCTUATIONS))
    return final


def noisy(caption, rng):
    words = caption.split()
    if rng.random() < 0.3 and len(words) > 3:
        words.insert(rng.randrange(1, len(words)), rng.choice(
            [",", "(", ")", "-", "'s", "cannot", "&", "10%", "$5", "Mr.", "U.S.", "...", "!!", "a.m.",
             "don't", "x-ray", '"']))
    if rng.random() < 0.2 and len(words) > 2:
        del words[rng.randrange(len(words))]
    s = " ".join(words).replace(" ,", ",").replace(" 's", "'s")
    if rng.random() < 0.5:
        s = s[:1].upper() + s[1:]
    return s + "." if rng.random() < 0.5 else s


def demo_corpus(coco_dir, out):
    rng = random.Random(17)
    fake = json.load(open(os.path.join(coco_dir, "results", "captions_val2014_fakecap_results.json")))
    ids = [r["image_id"] for r in fake]
    cap = {r["image_id"]: r["caption"] for r in fake}
    anns = [{"image_id": i, "id": 5 * k + d, "caption": noisy(cap[ids[(k + d * 37) % len(ids)]], rng)}
            for k, i in enumerate(ids) for d in range(5)]
    results = []
    for k, i in enumerate(ids[:700]):
        u = rng.random()
        src = cap[i] if u < 0.5 else cap[ids[(k + 74) % len(ids)]] if u < 0.8 else cap[rng.choice(ids)]
        results.append({"image_id": i, "caption": noisy(src, rng)})
    results[5]["caption"] = ""
    results[6]["caption"] = "..."
    os.makedirs(out, exist_ok=True)
    refs = {"info": {}, "type": "captions", "licenses": [],
            "images": [{"id": i, "file_name": "COCO_val2014_%012d.jpg" % i} for i in ids], "annotations": anns}
    json.dump(refs, open(os.path.join(out, "refs.json"), "w"))
    json.dump(results, open(os.path.join(out, "results.json"), "w"))
    return os.path.join(out, "refs.json"), os.path.join(out, "results.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--coco-caption", required=True)
    ap.add_argument("--classpath", required=True)
    ap.add_argument("--refs")
    ap.add_argument("--results")
    ap.add_argument("--demo-corpus")
    ap.add_argument("--caption", default="bin/caption")
    a = ap.parse_args()
    if a.demo_corpus:
        a.refs, a.results = demo_corpus(a.coco_caption, a.demo_corpus)
    if not (a.refs and a.results):
        sys.exit("coco_caption_check: give --refs and --results, or --demo-corpus")
    refs = json.load(open(a.refs))
    results = json.load(open(a.results))
    by_image = {}
    for ann in refs["annotations"]:
        by_image.setdefault(ann["image_id"], []).append(ann)
    ids = [r["image_id"] for r in results]
    work = tempfile.mkdtemp()
    try:
        Bleu, Cider, Rouge = load_scorers(a.coco_caption, work)
        gts = ptb_tokenize(a.classpath, {i: by_image[i] for i in ids})
        res = ptb_tokenize(a.classpath, {r["image_id"]: [r] for r in results})
        devnull = open(os.devnull, "w")
        saved, sys.stdout = sys.stdout, devnull  # bleu_scorer prints its counts
        bleu, _ = Bleu(4).compute_score(gts, res)
        cider, _ = Cider().compute_score(gts, res)
        rouge, _ = Rouge().compute_score(gts, res)
        sys.stdout = saved
    finally:
        shutil.rmtree(work)
    python = dict(zip(KEYS, [float(x) for x in bleu] + [float(cider), float(rouge)]))
    out = subprocess.run([a.caption, "score", "--refs", a.refs, "--results", a.results, "--json"],
                         stdout=subprocess.PIPE, check=True).stdout
    ours = json.loads(out)
    worst = max(abs(python[k] - ours[k]) for k in KEYS)
    print("images %d" % len(ids))
    for k in KEYS:
        print("%-7s coco-caption %.9f  caption score %.9f" % (k, python[k], ours[k]))
    print("largest difference %.3g" % worst)
    sys.exit(0 if worst <= 1e-6 else 1)


if __name__ == "__main__":
    main()
