#!/usr/bin/env node
// Times Florence-2 on ONNX Runtime (onnxruntime-node, CPU) the way `florence-studio-cli bench`
// times the engine: the pier sample's pixels (written by export_onnx.py), <CAPTION>, greedy,
// the end token ignored, a fixed number of generated tokens.
//
//   node tools/onnx-baseline/runner.js --dir ~/.cache/florence-studio/onnx-baseline/base \
//        [--threads 2,1] [--variants fp32,int8] [--rounds 5] [--tokens 64] [--no-spin] [--json]
//
// Per variant and thread count: one warm-up round, then --rounds rounds; each figure is the
// median over the rounds. "first token" is what bench calls it: vision encoder + text encoder
// (the engine adds its ~5 ms of preprocessing; here the pixels are given). "first step" is
// the cross-attention keys/values plus the first decoding step; "step" the cached steps after
// it (tokens 2..N), median and p95 within a round. --no-spin stops ONNX Runtime's idle
// intra-op threads from spinning (session.intra_op.allow_spinning=0; ONNX Runtime spins by
// default, the engine's OpenMP threads sleep: OMP_WAIT_POLICY=PASSIVE).
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const EOS = 2;
const DECODER_START = 2;
const MODELS = ['vision_encoder', 'encoder_model', 'decoder_cross_kv', 'decoder_with_past_model'];

function parseArgs(argv) {
    const args = {dir: '', threads: [2, 1], variants: ['fp32', 'int8'], rounds: 5, tokens: 64,
                  json: false, spin: true};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const value = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === '--dir') args.dir = value();
        else if (a === '--threads') args.threads = value().split(',').map(Number);
        else if (a === '--variants') args.variants = value().split(',');
        else if (a === '--rounds') args.rounds = Number(value());
        else if (a === '--tokens') args.tokens = Number(value());
        else if (a === '--json') args.json = true;
        else if (a === '--no-spin') args.spin = false;
        else if (a === '--help' || a === '-h') {
            process.stdout.write(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 14)
                .map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
            process.exit(0);
        } else throw new Error(`unknown argument ${a}`);
    }
    if (!args.dir) throw new Error('--dir DIR is required (the folder export_onnx.py wrote)');
    for (const v of args.variants)
        if (v !== 'fp32' && v !== 'int8') throw new Error(`unknown variant ${v} (fp32, int8)`);
    if (args.tokens < 2 || args.rounds < 1 || args.threads.some((t) => !(t >= 1)))
        throw new Error('--tokens must be at least 2, --rounds and --threads at least 1');
    return args;
}

const now = () => Number(process.hrtime.bigint()) / 1e6;

function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function percentile(xs, p) {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

function argmaxIgnoringEos(logits) {
    let best = -1;
    let bestValue = -Infinity;
    for (let i = 0; i < logits.length; i++) {
        if (i !== EOS && logits[i] > bestValue) {
            bestValue = logits[i];
            best = i;
        }
    }
    return best;
}

async function loadSessions(folder, threads, spin = true) {
    const options = {intraOpNumThreads: threads, interOpNumThreads: 1,
                     executionMode: 'sequential', graphOptimizationLevel: 'all'};
    if (!spin)
        options.extra = {session: {intra_op: {allow_spinning: '0'}, inter_op: {allow_spinning: '0'}}};
    const sessions = {};
    const start = now();
    for (const name of MODELS)
        sessions[name] = await ort.InferenceSession.create(path.join(folder, name + '.onnx'),
                                                           options);
    return {sessions, loadMs: now() - start};
}

// One image through the three parts, `tokens` tokens generated.
async function round(s, meta, pixels, tokens) {
    const ids = new ort.Tensor('int64', BigInt64Array.from(meta.prompt_ids.map(BigInt)),
                               [1, meta.prompt_ids.length]);
    const t0 = now();
    const {image_features: features} = await s.vision_encoder.run({pixel_values: pixels});
    const t1 = now();
    const {last_hidden_state: hidden} =
        await s.encoder_model.run({image_features: features, input_ids: ids});
    const t2 = now();
    const cross = await s.decoder_cross_kv.run({encoder_hidden_states: hidden});
    const t3 = now();
    const past = {};
    const empty = new Float32Array(0);
    for (let i = 0; i < meta.layers; i++) {
        for (const kv of ['key', 'value']) {
            past[`past_key_values.${i}.decoder.${kv}`] =
                new ort.Tensor('float32', empty, [1, meta.heads, 0, meta.head_dim]);
            past[`past_key_values.${i}.encoder.${kv}`] = cross[`present.${i}.encoder.${kv}`];
        }
    }
    const seq = [DECODER_START];
    const steps = [];
    let firstLogits = null;
    for (let t = 0; t < tokens; t++) {
        const start = now();
        const feeds = {input_ids: new ort.Tensor('int64', BigInt64Array.of(BigInt(seq[seq.length - 1])),
                                                 [1, 1]), ...past};
        const out = await s.decoder_with_past_model.run(feeds);
        seq.push(argmaxIgnoringEos(out.logits.data));
        if (t === 0) firstLogits = Array.from(out.logits.data.slice(0, 8));
        for (let i = 0; i < meta.layers; i++)
            for (const kv of ['key', 'value'])
                past[`past_key_values.${i}.decoder.${kv}`] = out[`present.${i}.decoder.${kv}`];
        steps.push(now() - start);
    }
    const cached = steps.slice(1);
    return {
        vision_ms: t1 - t0, text_encoder_ms: t2 - t1, first_token_ms: t2 - t0,
        first_step_ms: t3 - t2 + steps[0],
        step_ms: median(cached), step_p95_ms: percentile(cached, 95),
        ids: seq, first_logits: firstLogits,
    };
}

async function measure(dir, variant, threads, meta, pixels, args) {
    const folder = variant === 'int8' ? path.join(dir, 'int8') : dir;
    const {sessions, loadMs} = await loadSessions(folder, threads, args.spin);
    await round(sessions, meta, pixels, args.tokens); // warm-up
    const rounds = [];
    for (let r = 0; r < args.rounds; r++) rounds.push(await round(sessions, meta, pixels, args.tokens));
    for (const s of Object.values(sessions)) await s.release();
    const result = {variant, threads, spinning: args.spin, load_ms: loadMs,
                    rounds: rounds.length};
    for (const key of ['vision_ms', 'text_encoder_ms', 'first_token_ms', 'first_step_ms',
                       'step_ms', 'step_p95_ms'])
        result[key] = median(rounds.map((r) => r[key]));
    result.ids = rounds[0].ids;
    result.first_logits = rounds[0].first_logits;
    // The eager PyTorch model's tokens on the same weights and pixels (export_onnx.py).
    const ref = meta.reference_ids.slice(0, result.ids.length);
    let same = 0;
    while (same < ref.length && ref[same] === result.ids[same]) same++;
    result.tokens_matching_pytorch = `${same}/${ref.length}`;
    result.first_logits_max_diff = Math.max(
        ...meta.reference_first_logits.map((v, i) => Math.abs(v - result.first_logits[i])));
    return result;
}

function table(results, meta) {
    const f = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
    const lines = [
        `ONNX Runtime ${ort.env.versions.common} (onnxruntime-node, CPU), Florence-2 ` +
        `${meta.size}, ${meta.prompt_ids.length}-token prompt, medians of ${results[0].rounds} rounds, ` +
        `idle threads ${results[0].spinning ? 'spinning (its default)' : 'sleeping (--no-spin)'}`,
        '| variant | threads | load | vision | text encoder | first token (vision + text) | ' +
        'first step (cross k/v + step 1) | cached step median (p95) | tokens = PyTorch eager |',
        '|---|---|---|---|---|---|---|---|---|'];
    for (const r of results)
        lines.push(`| ${r.variant} | ${r.threads} | ${f(r.load_ms)} ms | ${f(r.vision_ms)} ms | ` +
                   `${f(r.text_encoder_ms)} ms | ${f(r.first_token_ms)} ms | ` +
                   `${f(r.first_step_ms)} ms | ${r.step_ms.toFixed(2)} (${r.step_p95_ms.toFixed(2)}) ms | ` +
                   `${r.tokens_matching_pytorch} |`);
    return lines.join('\n');
}

async function main() {
    const args = parseArgs(process.argv.slice(2));
    const meta = JSON.parse(fs.readFileSync(path.join(args.dir, 'meta.json'), 'utf8'));
    const raw = fs.readFileSync(path.join(args.dir, meta.pixels));
    const pixels = new ort.Tensor('float32',
                                  new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4),
                                  meta.pixel_shape);
    const results = [];
    for (const threads of args.threads)
        for (const variant of args.variants) {
            const r = await measure(args.dir, variant, threads, meta, pixels, args);
            if (!args.json)
                process.stderr.write(`${variant}, ${threads} thread(s): first token ` +
                                     `${r.first_token_ms.toFixed(0)} ms, step ${r.step_ms.toFixed(2)} ms\n`);
            results.push(r);
        }
    if (args.json)
        process.stdout.write(JSON.stringify({onnxruntime: ort.env.versions.common, size: meta.size,
                                             tokens: args.tokens, results}) + '\n');
    else process.stdout.write(table(results, meta) + '\n');
}

module.exports = {loadSessions, MODELS, EOS, DECODER_START};

if (require.main === module)
    main().catch((e) => {
        process.stderr.write(`runner.js: ${e.message || e}\n`);
        process.exit(1);
    });
