// queen-stream-suite.mjs runs Queen's own stream suite (test-v2/stream of Queen's
// JavaScript client) against the server at QUEEN_URL: each test alone, in name
// order, one line per test and run, then each test's count and the
// closing "N passed, N failed" line. queen-stream-suite.sh prepares the
// directory it takes and starts a bridge; see docs/streams.md.
//
//   node queen-stream-suite.mjs DIR   DIR holds client-v2/ and test-v2/stream/
//
// Environment:
//   QUEEN_URL       the server (required)
//   ONLY            comma list of test names to run (default: every test)
//   REPEAT          runs of each test (default 1)
//   TEST_TIMEOUT_S  a test still running after this many seconds fails (default 120)
//   TRACE           a file: every HTTP request the client and the SDK make, with
//                   the answer, one JSON object a line (what a diagnosis reads)
//
// Exit status: 0 when every run passed, 1 otherwise, 2 when the suite cannot run.
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const dir = path.resolve(process.argv[2] || '.')
const url = process.env.QUEEN_URL
if (!url) fail('QUEEN_URL is not set: the address of the server to test, e.g. http://127.0.0.1:6632')
const suiteDir = path.join(dir, 'test-v2', 'stream')
if (!fs.existsSync(path.join(dir, 'client-v2', 'index.js')) || !fs.existsSync(suiteDir)) {
  fail(`${dir} has no client-v2/index.js or no test-v2/stream/: give the directory of Queen's JavaScript client`)
}
const repeat = positive('REPEAT', 1)
const timeoutMs = positive('TEST_TIMEOUT_S', 120) * 1000
const only = (process.env.ONLY || '').split(',').map(s => s.trim()).filter(Boolean)

if (process.env.TRACE) traceFetch(process.env.TRACE)

// A test's stream may fail in the background after its test returned; that
// belongs to the test's own report, not to a crash of the whole run.
process.on('unhandledRejection', err => console.error('unhandled rejection:', err && err.message ? err.message : err))

const { Queen } = await import(pathToFileURL(path.join(dir, 'client-v2', 'index.js')).href)
const tests = await loadTests(suiteDir)
for (const name of only) {
  if (!tests.some(t => t.name === name)) fail(`no test named ${name}; the suite has: ${tests.map(t => t.name).join(', ')}`)
}
const selected = only.length ? tests.filter(t => only.includes(t.name)) : tests

const client = new Queen({ url, handleSignals: false })
const counts = new Map(selected.map(t => [t.name, { passed: 0, failed: 0 }]))
let passed = 0
let failed = 0
for (let run = 1; run <= repeat; run++) {
  for (const t of selected) {
    const t0 = Date.now()
    let r
    try {
      r = await withTimeout(t.fn(client), timeoutMs)
    } catch (err) {
      r = { success: false, message: 'threw: ' + (err && err.message ? err.message : String(err)) }
    }
    const ok = !!(r && r.success)
    const c = counts.get(t.name)
    if (ok) { passed++; c.passed++ } else { failed++; c.failed++ }
    const runTag = repeat > 1 ? ` run ${run}/${repeat}` : ''
    console.log(`${ok ? 'PASS' : 'FAIL'} ${t.name}${runTag} (${Date.now() - t0} ms): ${r && r.message ? r.message : ''}`)
  }
}

console.log('')
for (const [name, c] of counts) {
  console.log(`${c.failed === 0 ? 'ok  ' : 'FAIL'} ${name}: ${c.passed} of ${c.passed + c.failed} passed`)
}
console.log(`${passed} passed, ${failed} failed`)
await client.close().catch(() => {})
// Writes to a pipe are asynchronous: let them out before exiting, as a
// stopped stream may leave timers that would keep node running.
await new Promise(resolve => process.stdout.write('', resolve))
process.exit(failed === 0 ? 0 : 1)

// loadTests imports the suite's index or, without one, each test file;
// every exported function is a test. Tests run in name order, as in
// Queen's own runner, which also takes them from a module namespace.
async function loadTests(suite) {
  const files = fs.existsSync(path.join(suite, 'index.js'))
    ? ['index.js']
    : fs.readdirSync(suite).filter(f => f.endsWith('.js') && !f.startsWith('_')).sort()
  let out = []
  for (const f of files) {
    const mod = await import(pathToFileURL(path.join(suite, f)).href)
    for (const [name, fn] of Object.entries(mod)) {
      if (typeof fn === 'function' && !out.some(t => t.name === name)) out.push({ name, fn })
    }
  }
  if (out.length === 0) fail(`${suite} exports no test`)
  out = out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return out
}

function withTimeout(promise, ms) {
  let timer
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`still running after ${ms / 1000} s`)), ms) })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

function positive(name, dflt) {
  const v = process.env[name]
  if (v === undefined || v === '') return dflt
  const n = Number(v)
  if (!Number.isInteger(n) || n < 1) fail(`${name} must be a whole number of 1 or more, not ${JSON.stringify(v)}`)
  return n
}

// traceFetch wraps fetch, which both the client and the SDK use, so every
// request and its answer is written to file as it completes.
function traceFetch(file) {
  const fd = fs.openSync(file, 'a')
  const orig = globalThis.fetch
  let seq = 0
  globalThis.fetch = async (resource, opts = {}) => {
    const id = ++seq
    const sent = Date.now()
    const res = await orig(resource, opts)
    const text = await res.clone().text()
    fs.writeSync(fd, JSON.stringify({
      id, sent, answered: Date.now(), method: opts.method || 'GET', url: String(resource),
      body: parse(opts.body), status: res.status, answer: parse(text)
    }) + '\n')
    return res
  }
}

function parse(text) {
  if (typeof text !== 'string') return text ?? null
  try { return JSON.parse(text) } catch { return text }
}

function fail(msg) {
  console.error('queen-stream-suite: ' + msg)
  process.exit(2)
}
