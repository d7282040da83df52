#!/usr/bin/env node
// Checks the ONNX export against the engine itself: greedy decoding on ONNX Runtime with the
// engine's logits processors (engine/decoding/Generator.cpp processRow: no repeated 3-gram, the
// forced first and last tokens, the end token banned in between) must choose the tokens, with
// the same log-probabilities, that `florence-studio-cli run` chose on the speed demo.
//
//   florence-studio-cli run --model …/speed-demo-base --pixel-values DIR/pixels.safetensors \
//       --task '<CAPTION>' --beams 1 --ignore-eos --max-new-tokens 32 --json --quiet > run.json
//   node tools/onnx-baseline/check_cli.js --dir DIR --cli-json run.json [--variant int8]
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const {loadSessions, EOS, DECODER_START} = require('./runner');

const BOS = 0;
const NO_REPEAT_NGRAM = 3;

// Hugging Face's NoRepeatNGramLogitsProcessor: tokens that would repeat an n-gram.
function bannedTokens(seq, n) {
    if (seq.length + 1 < n) return [];
    const prefix = seq.slice(seq.length - n + 1).join(',');
    const banned = [];
    for (let i = 0; i + n <= seq.length; i++)
        if (seq.slice(i, i + n - 1).join(',') === prefix) banned.push(seq[i + n - 1]);
    return banned;
}

function processRow(row, seq, maxLength) {
    for (const id of bannedTokens(seq, NO_REPEAT_NGRAM)) row[id] = -Infinity;
    const force = (id) => {
        row.fill(-Infinity);
        row[id] = 0;
    };
    if (seq.length === 1) force(BOS);
    if (seq.length === maxLength - 1) force(EOS);
    else row[EOS] = -Infinity;
}

function logSoftmaxAt(row, index) {
    let top = -Infinity;
    for (const v of row) if (v > top) top = v;
    let sum = 0;
    for (const v of row) if (v !== -Infinity) sum += Math.exp(v - top);
    return row[index] - top - Math.log(sum);
}

async function main() {
    const argv = process.argv.slice(2);
    const get = (name, fallback) => {
        const i = argv.indexOf(name);
        return i >= 0 && i + 1 < argv.length ? argv[i + 1] : fallback;
    };
    const dir = get('--dir', '');
    const cliJson = get('--cli-json', '');
    const variant = get('--variant', 'fp32');
    if (!dir || !cliJson) throw new Error('--dir DIR and --cli-json FILE are required');
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8'));
    const cli = JSON.parse(fs.readFileSync(cliJson, 'utf8'));
    const want = cli.generated_ids;
    const wantLogprobs = cli.token_logprobs;
    const raw = fs.readFileSync(path.join(dir, meta.pixels));
    const pixels = new ort.Tensor('float32', new Float32Array(raw.buffer, raw.byteOffset,
                                                              raw.length / 4), meta.pixel_shape);
    const {sessions: s} = await loadSessions(variant === 'int8' ? path.join(dir, 'int8') : dir, 2);
    const ids = new ort.Tensor('int64', BigInt64Array.from(cli.prompt_ids.map(BigInt)),
                               [1, cli.prompt_ids.length]);
    const {image_features: features} = await s.vision_encoder.run({pixel_values: pixels});
    const {last_hidden_state: hidden} =
        await s.encoder_model.run({image_features: features, input_ids: ids});
    const cross = await s.decoder_cross_kv.run({encoder_hidden_states: hidden});
    const past = {};
    for (let i = 0; i < meta.layers; i++)
        for (const kv of ['key', 'value']) {
            past[`past_key_values.${i}.decoder.${kv}`] =
                new ort.Tensor('float32', new Float32Array(0), [1, meta.heads, 0, meta.head_dim]);
            past[`past_key_values.${i}.encoder.${kv}`] = cross[`present.${i}.encoder.${kv}`];
        }
    const seq = [DECODER_START];
    const logprobs = [];
    while (seq.length < want.length) {
        const out = await s.decoder_with_past_model.run({
            input_ids: new ort.Tensor('int64', BigInt64Array.of(BigInt(seq[seq.length - 1])), [1, 1]),
            ...past});
        const row = Float32Array.from(out.logits.data);
        processRow(row, seq, want.length);
        let best = 0;
        for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
        logprobs.push(logSoftmaxAt(row, best));
        seq.push(best);
        for (let i = 0; i < meta.layers; i++)
            for (const kv of ['key', 'value'])
                past[`past_key_values.${i}.decoder.${kv}`] = out[`present.${i}.decoder.${kv}`];
    }
    let same = 0;
    while (same < want.length && want[same] === seq[same]) same++;
    const diffs = logprobs.slice(0, same - 1).map((v, i) => Math.abs(v - wantLogprobs[i]));
    const maxDiff = diffs.length ? Math.max(...diffs) : NaN;
    process.stdout.write(`${variant}: ${same}/${want.length} tokens equal to the engine's ` +
                         `(start token included); log-probabilities of the equal ones differ ` +
                         `by at most ${maxDiff.toExponential(2)}\n` +
                         `  engine: ${want.join(' ')}\n  ONNX:   ${seq.join(' ')}\n`);
    process.exitCode = same === want.length ? 0 : 3;
}

main().catch((e) => {
    process.stderr.write(`check_cli.js: ${e.message || e}\n`);
    process.exit(1);
});
