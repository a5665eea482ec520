#!/usr/bin/env node
// ONNX Runtime (CPU EP) peer for tessel's end-to-end benchmark: times InferenceSession.run() on one
// input and prints one JSON line on stdout. Diagnostics go to stderr so stdout stays parseable.
'use strict';

const fs = require('fs');
const path = require('path');

const USAGE = `usage: node bench/ort/ort_bench.js MODEL.onnx INPUT.npy [--threads 2] [--warmup 10] [--runs 100] [--output OUT.npy]
                                          [--profile DIR]

Feeds INPUT.npy (float32/int64/int32, little-endian, C order; .npy v1 or v2) to the model's first
input, runs --warmup untimed runs and then --runs timed runs of session.run(), and prints
{"model", "threads", "runs", "median_ms", "p10_ms", "p90_ms", "samples_ms", "peak_rss_mb", "ort_version", ...}.
--output writes the model's first output as .npy. --profile runs with ONNX Runtime's profiler on (its
trace goes to DIR) and adds "nodes": each node's median kernel time over the timed runs, slowest
first, to set beside \`tessel run --profile\`; the profiler's own cost is in that run's latency.`;

class UserError extends Error {}

// ---------------------------------------------------------------------------------------------
// .npy reading and writing (format spec: numpy.lib.format). Only little-endian C-order arrays of
// the dtypes below; anything else is rejected rather than misread.

const NPY_MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // "\x93NUMPY"

// descr -> ONNX Runtime tensor type, typed array, element size, DataView accessor.
const NPY_DTYPES = {
  '<f4': { ortType: 'float32', Array: Float32Array, size: 4, get: 'getFloat32', set: 'setFloat32' },
  '<i8': { ortType: 'int64', Array: BigInt64Array, size: 8, get: 'getBigInt64', set: 'setBigInt64' },
  '<i4': { ortType: 'int32', Array: Int32Array, size: 4, get: 'getInt32', set: 'setInt32' },
};

function descrForOrtType(ortType) {
  for (const [descr, info] of Object.entries(NPY_DTYPES)) {
    if (info.ortType === ortType) return descr;
  }
  return null;
}

// The header is a Python dict literal, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }.
// numpy always writes these three keys; parse each one explicitly instead of evaluating anything.
function parseNpyHeader(text, file) {
  const descr = /['"]descr['"]\s*:\s*['"]([^'"]*)['"]/.exec(text);
  const fortran = /['"]fortran_order['"]\s*:\s*(True|False)/.exec(text);
  const shape = /['"]shape['"]\s*:\s*\(([^)]*)\)/.exec(text);
  if (!descr || !fortran || !shape) {
    throw new UserError(`${file}: malformed .npy header: ${JSON.stringify(text.trim())}`);
  }
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  const parsed = dims.map((d) => {
    if (!/^\d+$/.test(d)) throw new UserError(`${file}: bad dimension '${d}' in .npy shape`);
    return Number(d);
  });
  return { descr: descr[1], fortranOrder: fortran[1] === 'True', shape: parsed };
}

function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (err) {
    throw new UserError(`cannot read input ${file}: ${err.message}`);
  }
  if (buf.length < 10 || !buf.subarray(0, 6).equals(NPY_MAGIC)) {
    throw new UserError(`${file}: not a .npy file (bad magic)`);
  }
  const major = buf[6];
  const minor = buf[7];
  let headerLen;
  let headerStart;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    headerStart = 10;
  } else if (major === 2) {
    if (buf.length < 12) throw new UserError(`${file}: truncated .npy header`);
    headerLen = buf.readUInt32LE(8);
    headerStart = 12;
  } else {
    throw new UserError(`${file}: unsupported .npy format version ${major}.${minor} (only 1.x and 2.x are read)`);
  }
  const dataStart = headerStart + headerLen;
  if (dataStart > buf.length) throw new UserError(`${file}: truncated .npy header`);
  const header = parseNpyHeader(buf.toString('latin1', headerStart, dataStart), file);
  const dtype = NPY_DTYPES[header.descr];
  if (!dtype) {
    throw new UserError(`${file}: unsupported dtype '${header.descr}' (supported: ${Object.keys(NPY_DTYPES).join(', ')})`);
  }
  if (header.fortranOrder) throw new UserError(`${file}: Fortran-order arrays are not supported`);
  const count = header.shape.reduce((a, b) => a * b, 1);
  const nbytes = count * dtype.size;
  if (buf.length - dataStart !== nbytes) {
    throw new UserError(`${file}: data is ${buf.length - dataStart} bytes, shape [${header.shape}] of ` +
                        `${header.descr} needs ${nbytes}`);
  }
  // DataView reads: the data offset need not be aligned and the host need not be little-endian.
  const view = new DataView(buf.buffer, buf.byteOffset + dataStart, nbytes);
  const data = new dtype.Array(count);
  for (let i = 0; i < count; i++) data[i] = view[dtype.get](i * dtype.size, true);
  return { data, shape: header.shape, ortType: dtype.ortType };
}

function writeNpy(file, data, shape, ortType) {
  const descr = descrForOrtType(ortType);
  if (!descr) throw new UserError(`cannot write output of type ${ortType} as .npy`);
  const dtype = NPY_DTYPES[descr];
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  // numpy pads with spaces so the data starts on a 64-byte boundary; the header ends with '\n'.
  const paddedTotal = (prefix) => Math.ceil((prefix + dict.length + 1) / 64) * 64;
  // Version 1 stores the header length in 16 bits; longer headers (huge ranks) need version 2.
  const v1 = paddedTotal(10) - 10 <= 0xffff;
  const prefix = v1 ? 10 : 12;
  const total = paddedTotal(prefix);
  dict = dict.padEnd(total - prefix - 1, ' ') + '\n';
  const head = Buffer.alloc(prefix);
  NPY_MAGIC.copy(head, 0);
  head[6] = v1 ? 1 : 2;
  head[7] = 0;
  if (v1) head.writeUInt16LE(dict.length, 8);
  else head.writeUInt32LE(dict.length, 8);
  const body = Buffer.alloc(data.length * dtype.size);
  const view = new DataView(body.buffer, body.byteOffset, body.length);
  for (let i = 0; i < data.length; i++) view[dtype.set](i * dtype.size, data[i], true);
  try {
    fs.writeFileSync(file, Buffer.concat([head, Buffer.from(dict, 'latin1'), body]));
  } catch (err) {
    throw new UserError(`cannot write ${file}: ${err.message}`);
  }
}

// ---------------------------------------------------------------------------------------------

function parseArgs(argv) {
  const opts = { threads: 2, warmup: 10, runs: 100, output: null, profile: null };
  const positional = [];
  const intOption = { '--threads': ['threads', 1], '--warmup': ['warmup', 0], '--runs': ['runs', 1] };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      console.log(USAGE);
      process.exit(0);
    }
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    let value;
    const eq = arg.indexOf('=');
    if (eq >= 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    } else {
      if (i + 1 >= argv.length) throw new UserError(`${arg} needs a value\n${USAGE}`);
      value = argv[++i];
    }
    if (arg in intOption) {
      const [key, min] = intOption[arg];
      if (!/^\d+$/.test(value) || Number(value) < min) {
        throw new UserError(`${arg} must be an integer >= ${min}, got '${value}'`);
      }
      opts[key] = Number(value);
    } else if (arg === '--output') {
      opts.output = value;
    } else if (arg === '--profile') {
      opts.profile = value;
    } else {
      throw new UserError(`unknown option ${arg}\n${USAGE}`);
    }
  }
  if (positional.length !== 2) throw new UserError(`expected MODEL.onnx and INPUT.npy\n${USAGE}`);
  [opts.model, opts.input] = positional;
  return opts;
}

// Linear interpolation between closest ranks (numpy.percentile's default), on sorted samples.
function percentile(sorted, p) {
  const pos = (sorted.length - 1) * p / 100;
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

const round4 = (x) => Math.round(x * 1e4) / 1e4;

// The profiler's trace (Chrome trace format) holds one "Node" event per node per run, named
// NODE_kernel_time. The last `runs` events of a node are the timed runs' (warm-up runs come first).
function nodeMedians(traceFile, runs) {
  let events;
  try {
    events = JSON.parse(fs.readFileSync(traceFile, 'utf8'));
  } catch (err) {
    throw new UserError(`cannot read ONNX Runtime's profile ${traceFile}: ${err.message}`);
  }
  const byNode = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!byNode.has(name)) byNode.set(name, { op: (e.args && e.args.op_name) || '', us: [] });
    byNode.get(name).us.push(e.dur);
  }
  const nodes = [];
  for (const [name, { op, us }] of byNode) {
    const timed = us.slice(-runs).sort((a, b) => a - b);
    nodes.push({ node: name, op, median_us: round4(percentile(timed, 50)) });
  }
  return nodes.sort((a, b) => b.median_us - a.median_us);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(opts.model)) throw new UserError(`model not found: ${opts.model}`);
  const input = readNpy(opts.input);

  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (err) {
    throw new UserError(`cannot load onnxruntime-node (run 'npm ci --prefix bench/ort'): ${err.message}`);
  }

  let session;
  try {
    session = await ort.InferenceSession.create(opts.model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: opts.threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
      ...(opts.profile ? { enableProfiling: true, profileFilePrefix: path.join(opts.profile, 'ort_profile') } : {}),
    });
  } catch (err) {
    throw new UserError(`cannot load model ${opts.model}: ${err.message}`);
  }

  const inputName = session.inputNames[0];
  const outputName = session.outputNames[0];
  const feeds = { [inputName]: new ort.Tensor(input.ortType, input.data, input.shape) };

  const runOnce = async () => {
    try {
      return await session.run(feeds);
    } catch (err) {
      throw new UserError(`run failed (input '${inputName}', ${input.ortType} [${input.shape}]): ${err.message}`);
    }
  };

  let result;
  for (let i = 0; i < opts.warmup; i++) result = await runOnce();
  const samples = [];
  for (let i = 0; i < opts.runs; i++) {
    const t0 = process.hrtime.bigint();
    result = await runOnce();
    const t1 = process.hrtime.bigint();
    samples.push(Number(t1 - t0) / 1e6);
  }

  if (opts.output) {
    const out = result[outputName];
    writeNpy(opts.output, out.data, out.dims, out.type);
  }

  const sorted = [...samples].sort((a, b) => a - b);
  const report = {
    model: opts.model,
    input: opts.input,
    input_name: inputName,
    threads: opts.threads,
    warmup: opts.warmup,
    runs: opts.runs,
    median_ms: round4(percentile(sorted, 50)),
    p10_ms: round4(percentile(sorted, 10)),
    p90_ms: round4(percentile(sorted, 90)),
    min_ms: round4(sorted[0]),
    samples_ms: samples.map(round4),
    peak_rss_mb: round4(process.resourceUsage().maxRSS / 1024),
    ort_version: ort.env.versions.node,
  };
  if (opts.profile) {
    session.endProfiling();
    const traces = fs.readdirSync(opts.profile).filter((f) => f.startsWith('ort_profile') && f.endsWith('.json'))
      .map((f) => path.join(opts.profile, f))
      .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
    if (!traces.length) throw new UserError(`ONNX Runtime wrote no profile into ${opts.profile}`);
    report.nodes = nodeMedians(traces[0], opts.runs);
  }
  await session.release();
  process.stdout.write(JSON.stringify(report) + '\n');
}

if (require.main === module) {
  main().catch((err) => {
    // UserError text is the whole story; anything else is a bug here, so keep its stack.
    process.stderr.write(`ort_bench: error: ${err instanceof UserError ? err.message : err.stack}\n`);
    process.exit(1);
  });
}

// Exported so the .npy reader and writer can be checked against numpy without a model.
module.exports = { readNpy, writeNpy, UserError };
