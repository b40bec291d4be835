// bench_ort.js: ONNX Runtime (npm's onnxruntime-node, its CPU library) running one exported
// encoder, as the inference peer of bench_encoders.py.
//
//   node bench/reference/bench_ort.js MODEL.onnx BATCH SIZE THREADS BATCHES [IN.bin REF.bin]
//
// MODEL.onnx comes from export_onnx.py (input "image" (BATCH, 3, SIZE, SIZE)). The session
// runs with graphOptimizationLevel 'all', THREADS intra-op threads, one inter-op thread,
// sequential execution; one warm-up batch, then BATCHES timed ones (the median counts).
// With IN.bin and REF.bin (export_onnx.py --check: a batch and torchvision's output on it,
// raw float32) the warm-up runs on that batch and the largest absolute difference from
// torchvision's output is reported. Prints one JSON object on stdout. onnxruntime-node is
// looked up under ORT_NODE_MODULES (the folder `make bench-deps` installs it into) before
// node's own search path.
'use strict';
const fs = require('fs');
const path = require('path');

// The package's folder (or name), for require.
function ortModule() {
    const dir = process.env.ORT_NODE_MODULES;
    return dir ? path.resolve(dir, 'onnxruntime-node') : 'onnxruntime-node';
}

function readFloats(file) {
    const buf = fs.readFileSync(file);
    return new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
}

function maxAbsDiff(a, b) {
    if (a.length !== b.length) throw new Error(`output has ${a.length} values, reference ${b.length}`);
    let m = 0;
    for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
    return m;
}

async function main() {
    const argv = process.argv.slice(2);
    if (argv.length !== 5 && argv.length !== 7) {
        console.error('usage: node bench_ort.js MODEL.onnx BATCH SIZE THREADS BATCHES [IN.bin REF.bin]');
        return 2;
    }
    const [model, batch, size, threads, batches] = [argv[0], ...argv.slice(1, 5).map(Number)];
    const ort = require(ortModule());
    const session = await ort.InferenceSession.create(model, {
        executionProviders: ['cpu'],
        graphOptimizationLevel: 'all',
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionMode: 'sequential',
    });
    const dims = [batch, 3, size, size];
    let input = new Float32Array(batch * 3 * size * size);
    if (argv.length === 7) input = readFloats(argv[5]);
    else for (let i = 0; i < input.length; i++) input[i] = Math.sin(i * 0.001);
    const feeds = { image: new ort.Tensor('float32', input, dims) };
    const first = (await session.run(feeds)).features;
    const version = require(`${ortModule()}/package.json`).version;
    const result = { runtime: `onnxruntime-node ${version}`, out: first.dims };
    if (argv.length === 7) result.max_abs_diff = maxAbsDiff(first.data, readFloats(argv[6]));
    const times = [];
    const cpu0 = process.cpuUsage();
    for (let b = 0; b < batches; b++) {
        const t0 = process.hrtime.bigint();
        await session.run(feeds);
        times.push(Number(process.hrtime.bigint() - t0) / 1e9);
    }
    const cpu = process.cpuUsage(cpu0);
    times.sort((x, y) => x - y);
    const med = times[Math.floor(times.length / 2)];
    result.images_per_s = batch / med;
    result.ms_per_batch = 1e3 * med;
    result.images_per_cpu_s = batch * batches / ((cpu.user + cpu.system) / 1e6);
    console.log(JSON.stringify(result));
    return 0;
}

main().then((code) => { process.exitCode = code; },
            (e) => { console.error(`bench_ort.js: ${e.message}`); process.exitCode = 1; });
