#!/usr/bin/env node
// Summarizes interleaved runs: runner.js --json outputs and `florence-studio-cli bench --json`
// outputs taken in the same minutes, into one table with the engine's figures against
// ONNX Runtime's (medians over the runs; on a shared machine only the ratios mean something),
// and one of each run against the ONNX Runtime run before it with the median of those ratios.
//
//   node tools/onnx-baseline/report.js --ort ort-1.json --ort ort-2.json \
//        --engine bench-1.json --engine bench-2.json [--tokens 64]
'use strict';

const fs = require('fs');

function median(xs) {
    const s = xs.filter((x) => typeof x === 'number' && isFinite(x)).sort((a, b) => a - b);
    if (!s.length) return NaN;
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function parseArgs(argv) {
    const args = {ort: [], engine: [], tokens: 64};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
        if (a === '--ort') args.ort.push(argv[++i]);
        else if (a === '--engine') args.engine.push(argv[++i]);
        else if (a === '--tokens') args.tokens = Number(argv[++i]);
        else throw new Error(`unknown argument ${a}`);
    }
    if (!args.ort.length) throw new Error('give at least one --ort FILE (runner.js --json)');
    return args;
}

const read = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

function engineRows(files, tokens) {
    const runs = files.map(read);
    const step = (r) => {
        const lengths = Object.keys(r.cached || {});
        const key = lengths.includes(String(tokens)) ? String(tokens)
            : lengths.sort((a, b) => Number(b) - Number(a))[0];
        return r.cached[key];
    };
    const rows = [{
        label: 'our engine fp32',
        vision_ms: median(runs.map((r) => r.vision_ms)),
        text_encoder_ms: median(runs.map((r) => r.text_encoder_ms)),
        first_token_ms: median(runs.map((r) => r.first_token_ms)),
        step_ms: median(runs.map((r) => step(r).median_step_ms)),
        step_p95_ms: median(runs.map((r) => step(r).p95_step_ms)),
    }];
    // The reduced-precision modes' blocks in `bench --json` have the same shape.
    for (const [key, label] of [['bfloat16', 'bf16'], ['int8', 'int8']]) {
        if (!runs.every((r) => r[key]))
            continue;
        rows.push({
            label: `our engine ${label}`,
            vision_ms: median(runs.map((r) => r[key].vision_ms)),
            text_encoder_ms: median(runs.map((r) => r[key].text_encoder_ms)),
            first_token_ms: median(runs.map((r) => r[key].first_token_ms)),
            step_ms: median(runs.map((r) => r[key].median_step_ms)),
        });
    }
    return rows;
}

function ortRows(files) {
    const runs = files.map(read);
    const rows = [];
    for (const first of runs[0].results) {
        const same = runs.map((r) => r.results.find((x) => x.variant === first.variant &&
                                                          x.threads === first.threads));
        const row = {label: `ONNX Runtime ${runs[0].onnxruntime} ${first.variant}, ` +
                            `${first.threads} thread${first.threads > 1 ? 's' : ''}`,
                     variant: first.variant, threads: first.threads,
                     tokens: same.map((r) => r.tokens_matching_pytorch).join(', ')};
        for (const key of ['vision_ms', 'text_encoder_ms', 'first_token_ms', 'first_step_ms',
                           'step_ms', 'step_p95_ms'])
            row[key] = median(same.map((r) => r[key]));
        rows.push(row);
    }
    return rows;
}

// Run i of the engine against run i of ONNX Runtime (taken one after the other), each run's
// ratio and the median of those ratios: steadier than the ratio of the two medians when the
// machine's speed drifts between runs, since both sides of a pair share the drift.
function perRunTable(args) {
    const ort = args.ort.map(read);
    const eng = args.engine.map(read);
    const n = Math.min(ort.length, eng.length);
    const ortResult = (run, variant) => {
        const all = run.results.filter((x) => x.variant === variant);
        return all.find((x) => x.threads === 2) || all[0];
    };
    const step = (r) => {
        const lengths = Object.keys(r.cached || {});
        const key = lengths.includes(String(args.tokens)) ? String(args.tokens)
            : lengths.sort((a, b) => Number(b) - Number(a))[0];
        return r.cached[key].median_step_ms;
    };
    // [label, engine figure, ONNX Runtime variant, its figure]
    const rows = [
        ['float32 cached step', (e) => step(e), 'fp32', (o) => o.step_ms],
        ['int8 cached step', (e) => e.int8 && e.int8.median_step_ms, 'int8', (o) => o.step_ms],
        ['float32 first token', (e) => e.first_token_ms, 'fp32', (o) => o.first_token_ms],
        ['int8 first token', (e) => e.int8 && e.int8.first_token_ms, 'int8',
         (o) => o.first_token_ms],
        ['int8 vision encoder', (e) => e.int8 && e.int8.vision_ms, 'int8', (o) => o.vision_ms],
        ['int8 text encoder', (e) => e.int8 && e.int8.text_encoder_ms, 'int8',
         (o) => o.text_encoder_ms],
        ['bfloat16 cached step (against fp32)', (e) => e.bfloat16 && e.bfloat16.median_step_ms,
         'fp32', (o) => o.step_ms],
    ];
    const fmt = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
    const out = [`per run (engine run i against ONNX Runtime run i, ${n} pairs)`, '',
                 '| | engine, runs | ONNX Runtime, runs | engine / ONNX Runtime per run | median |',
                 '|---|---|---|---|---|'];
    for (const [label, engineFigure, variant, ortFigure] of rows) {
        const pairs = [];
        for (let i = 0; i < n; i++) {
            const o = ortResult(ort[i], variant);
            const a = engineFigure(eng[i]);
            const b = o && ortFigure(o);
            if (typeof a === 'number' && typeof b === 'number' && b > 0)
                pairs.push([a, b]);
        }
        if (pairs.length < n || !n)
            continue;
        const ratios = pairs.map(([a, b]) => a / b);
        out.push(`| ${label} | ${pairs.map(([a]) => fmt(a)).join(' / ')} ms | ` +
                 `${pairs.map(([, b]) => fmt(b)).join(' / ')} ms | ` +
                 `${ratios.map((r) => r.toFixed(2)).join(' / ')} | ${median(ratios).toFixed(2)}× |`);
    }
    return out;
}

function main() {
    const args = parseArgs(process.argv.slice(2));
    const ort = ortRows(args.ort);
    const engine = args.engine.length ? engineRows(args.engine, args.tokens) : [];
    const ms = (x) => (isFinite(x) ? (x >= 100 ? `${x.toFixed(0)} ms` : `${x.toFixed(1)} ms`) : '');
    const out = [
        `medians over ${args.ort.length} ONNX Runtime run(s)` +
        (engine.length ? ` and ${args.engine.length} engine bench run(s), interleaved` : ''),
        '',
        '| | vision | text encoder | first token (vision + text) | cached step median (p95) |',
        '|---|---|---|---|---|'];
    for (const r of [...ort, ...engine])
        out.push(`| ${r.label} | ${ms(r.vision_ms)} | ${ms(r.text_encoder_ms)} | ` +
                 `${ms(r.first_token_ms)} | ${ms(r.step_ms)}` +
                 (isFinite(r.step_p95_ms) ? ` (${ms(r.step_p95_ms)})` : '') + ' |');
    if (engine.length) {
        out.push('', '| engine / ONNX Runtime (below 1: the engine is faster) | vision | ' +
                 'text encoder | first token | cached step |', '|---|---|---|---|---|');
        const ratio = (a, b) => (isFinite(a / b) ? `${(a / b).toFixed(2)}×` : '');
        for (const e of engine)
            for (const o of ort.filter((x) => x.threads === 2 || ort.length <= 2))
                out.push(`| ${e.label} / ${o.label} | ${ratio(e.vision_ms, o.vision_ms)} | ` +
                         `${ratio(e.text_encoder_ms, o.text_encoder_ms)} | ` +
                         `${ratio(e.first_token_ms, o.first_token_ms)} | ` +
                         `${ratio(e.step_ms, o.step_ms)} |`);
    }
    if (engine.length)
        out.push('', ...perRunTable(args));
    out.push('', 'ONNX Runtime tokens equal to the PyTorch eager model\'s (per run): ' +
             ort.map((r) => `${r.variant}/${r.threads}t ${r.tokens}`).join('; '));
    process.stdout.write(out.join('\n') + '\n');
}

try {
    main();
} catch (e) {
    process.stderr.write(`report.js: ${e.message || e}\n`);
    process.exit(1);
}
