#!/usr/bin/env node
// A small fake of Google Cloud Storage's JSON API (storage/v1) and of Google's OAuth 2.0 token
// endpoint, for statetool's tests of gs:// (no GCS emulator starts offline). It listens on
// 127.0.0.1 only, keeps everything in memory, prints its port on standard output once it
// listens, and stops by itself: when its standard input ends (with --stdin) or after --lifetime
// seconds (default 600).
//
//   node tests/gcsfake.js [--sa EMAIL=PUBLIC_KEY.pem[:KID]]... [--user ID:SECRET:REFRESH]...
//                         [--token TOKEN]... [--bucket NAME]... [--token-ttl SECONDS]
//                         [--no-auth] [--stdin] [--lifetime SECONDS]
//
// What it implements, as Google documents and answers it (see doc/DESIGN.md, "The Google Cloud
// Storage store", for what it does not check):
//   POST /token                         grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer
//                                       (the JWT's RS256 signature checked with the service
//                                       account's public key, its kid, iss, aud = this URL,
//                                       scope, iat and exp) and grant_type=refresh_token
//   GET/POST/DELETE /storage/v1/b[/B]   buckets.get, buckets.insert, buckets.delete
//   GET  /storage/v1/b/B/o              objects.list: prefix, delimiter, pageToken, maxResults,
//                                       startOffset, endOffset
//   GET  /storage/v1/b/B/o/O            objects.get: the resource, or the bytes with alt=media
//   POST /upload/storage/v1/b/B/o       objects.insert, uploadType=media and multipart
//                                       (md5Hash and crc32c of the metadata checked)
//   DELETE /storage/v1/b/B/o/O          objects.delete
//   POST /storage/v1/b/B/o/O/rewriteTo/b/B2/o/O2   objects.rewrite (objects over 1 MiB in steps
//                                       with a rewriteToken, as GCS does for big objects)
//   POST /storage/v1/b/B/o/O/copyTo/b/B2/o/O2      objects.copy
//   preconditions ifGenerationMatch (0: no live object), ifGenerationNotMatch,
//   ifMetagenerationMatch, ifMetagenerationNotMatch, ifSourceGenerationMatch (412
//   conditionNotMet; a GET whose ifGenerationNotMatch holds: 304); generations (microsecond
//   timestamps, new with every write; a request for another generation than the live one: 404);
//   401 for a missing, unknown or expired bearer token (unless --no-auth: STORAGE_EMULATOR_HOST
//   mode), 403 for a write with a read-only scope; 404 for a missing bucket ("The specified
//   bucket does not exist.") or object ("No such object: B/O").
// Test controls (never authenticated): GET /_fake/log (every request: method, path, query, whether
// it carried a bearer token and whether that was valid; never a token: the JSON API takes it
// in the Authorization header only), DELETE /_fake/log,
// POST /_fake/fail [{"method","path" (a substring),"times","action": "status" (answer `status`
// without doing anything) | "drop" (close without an answer, nothing done) | "lose" (do it, then
// close without an answer) | "cut" (do it, answer half of the body, close)}], POST /_fake/config
// {"auth": bool, "tokenTtl": seconds, "rewriteChunk": bytes}.
'use strict';

const http = require('http');
const crypto = require('crypto');
const fs = require('fs');

const args = process.argv.slice(2);
const cfg = { auth: true, tokenTtl: 3600, rewriteChunk: 1 << 20, lifetime: 600, stdin: false };
const accounts = new Map(); // email -> {key: KeyObject, kid}
const users = new Map(); // client_id -> {secret, refresh}
const tokens = new Map(); // token -> {exp (ms), scope}
const buckets = new Map(); // name -> {created, objects: Map(name -> object)}
let faults = [];
let log = [];
let lastGen = 0;

for (let i = 0; i < args.length; i++) {
  const a = args[i], v = args[i + 1];
  if (a === '--sa') {
    const eq = v.indexOf('='), rest = v.slice(eq + 1), colon = rest.lastIndexOf(':');
    const file = colon > 0 && !rest.slice(colon + 1).includes('/') ? rest.slice(0, colon) : rest;
    const kid = file === rest ? '' : rest.slice(colon + 1);
    accounts.set(v.slice(0, eq), { key: crypto.createPublicKey(fs.readFileSync(file)), kid });
    i++;
  } else if (a === '--user') {
    const [id, secret, refresh] = v.split(':');
    users.set(id, { secret, refresh });
    i++;
  } else if (a === '--token') {
    tokens.set(v, { exp: Infinity, scope: 'https://www.googleapis.com/auth/devstorage.full_control' });
    i++;
  } else if (a === '--bucket') {
    buckets.set(v, { created: new Date(), objects: new Map() });
    i++;
  } else if (a === '--token-ttl') {
    cfg.tokenTtl = Number(v);
    i++;
  } else if (a === '--lifetime') {
    cfg.lifetime = Number(v);
    i++;
  } else if (a === '--no-auth') {
    cfg.auth = false;
  } else if (a === '--stdin') {
    cfg.stdin = true;
  } else {
    process.stderr.write(`gcsfake: unknown argument ${a}\n`);
    process.exit(2);
  }
}

// ---- helpers ----

const CRC32C_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32c(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC32C_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  const out = Buffer.alloc(4);
  out.writeUInt32BE((c ^ 0xffffffff) >>> 0);
  return out.toString('base64');
}

function md5(buf) {
  return crypto.createHash('md5').update(buf).digest('base64');
}

function newGeneration() {
  lastGen = Math.max(lastGen + 1, Date.now() * 1000);
  return lastGen;
}

// Names compare as GCS orders them: by their UTF-8 bytes.
function byName(a, b) {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function send(res, status, body, headers) {
  const text = body === undefined ? '' : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const h = Object.assign({ 'Content-Length': Buffer.byteLength(text) }, headers || {});
  if (typeof body === 'object' && !Buffer.isBuffer(body) && !h['Content-Type']) h['Content-Type'] = 'application/json; charset=UTF-8';
  res.writeHead(status, h);
  res.end(res.req.method === 'HEAD' ? undefined : text);
}

function gerror(res, status, reason, message, extra) {
  const e = Object.assign({ message, domain: 'global', reason }, extra || {});
  send(res, status, { error: { code: status, message, errors: [e] } });
}

function resource(bucket, name, o) {
  const gen = String(o.generation);
  return {
    kind: 'storage#object',
    id: `${bucket}/${name}/${gen}`,
    selfLink: `/storage/v1/b/${encodeURIComponent(bucket)}/o/${encodeURIComponent(name)}`,
    mediaLink: `/download/storage/v1/b/${encodeURIComponent(bucket)}/o/${encodeURIComponent(name)}?generation=${gen}&alt=media`,
    name,
    bucket,
    generation: gen,
    metageneration: String(o.metageneration),
    contentType: o.contentType,
    storageClass: 'STANDARD',
    size: String(o.data.length),
    md5Hash: o.md5,
    crc32c: o.crc32c,
    etag: Buffer.from(`${gen}/${o.metageneration}`).toString('base64'),
    timeCreated: o.created.toISOString(),
    updated: o.updated.toISOString(),
    timeStorageClassUpdated: o.created.toISOString(),
  };
}

// The preconditions of q (URLSearchParams) on the live object `o` (undefined: none); `src`
// names the source-object forms (ifSourceGenerationMatch...). True when they hold.
function preconditions(q, o, src) {
  const p = src ? 'ifSource' : 'if';
  const gm = q.get(`${p}GenerationMatch`), gn = q.get(`${p}GenerationNotMatch`);
  const mm = q.get(`${p}MetagenerationMatch`), mn = q.get(`${p}MetagenerationNotMatch`);
  const gen = o ? String(o.generation) : '0', meta = o ? String(o.metageneration) : null;
  if (gm !== null && gm !== gen) return false;
  if (gn !== null && gn === gen) return false;
  if (mm !== null && (!o || mm !== meta)) return false;
  if (mn !== null && o && mn === meta) return false;
  return true;
}

function conditionNotMet(res) {
  gerror(res, 412, 'conditionNotMet', 'At least one of the pre-conditions you specified did not hold.', {
    locationType: 'header',
    location: 'If-Match',
  });
}

const STORAGE_SCOPES = ['devstorage.read_only', 'devstorage.read_write', 'devstorage.full_control', 'cloud-platform', 'cloud-platform.read-only'];
const WRITE_SCOPES = ['devstorage.read_write', 'devstorage.full_control', 'cloud-platform'];

function hasScope(scope, list) {
  return scope.split(' ').some((s) => list.some((l) => s === `https://www.googleapis.com/auth/${l}`));
}

// The bearer token's verdict: 'none', 'invalid', or the token's record.
function bearer(req) {
  const h = req.headers.authorization;
  if (!h) return 'none';
  const m = /^Bearer (\S+)$/.exec(h);
  const t = m && tokens.get(m[1]);
  if (!t || t.exp <= Date.now()) return 'invalid';
  return t;
}

// ---- the token endpoint ----

function b64json(part) {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch (e) {
    return null;
  }
}

function tokenError(res, status, error, description) {
  send(res, status, { error, error_description: description });
}

function issue(res, scope) {
  const t = `ya29.fake-${crypto.randomBytes(24).toString('hex')}`;
  tokens.set(t, { exp: Date.now() + cfg.tokenTtl * 1000, scope });
  send(res, 200, { access_token: t, expires_in: cfg.tokenTtl, token_type: 'Bearer' });
}

function tokenEndpoint(req, res, body) {
  if ((req.headers['content-type'] || '').split(';')[0].trim() !== 'application/x-www-form-urlencoded')
    return tokenError(res, 400, 'invalid_request', 'Invalid Content-Type');
  const f = new URLSearchParams(body.toString('utf8'));
  const grant = f.get('grant_type');
  if (grant === 'refresh_token') {
    const u = users.get(f.get('client_id') || '');
    if (!u || u.secret !== f.get('client_secret')) return tokenError(res, 401, 'invalid_client', 'The OAuth client was not found.');
    if (u.refresh !== f.get('refresh_token')) return tokenError(res, 400, 'invalid_grant', 'Bad Request');
    return issue(res, 'https://www.googleapis.com/auth/cloud-platform');
  }
  if (grant !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return tokenError(res, 400, 'unsupported_grant_type', `Invalid grant_type: ${grant || ''}`);
  const jwt = f.get('assertion') || '';
  const parts = jwt.split('.');
  const head = parts.length === 3 && b64json(parts[0]), claims = parts.length === 3 && b64json(parts[1]);
  if (!head || !claims) return tokenError(res, 400, 'invalid_grant', 'Invalid JWT: the assertion is no JWT');
  if (head.alg !== 'RS256' || (head.typ !== undefined && head.typ !== 'JWT')) return tokenError(res, 400, 'invalid_grant', 'Invalid JWT Signature.');
  const sa = accounts.get(claims.iss);
  if (typeof claims.iss !== 'string' || !sa) return tokenError(res, 400, 'invalid_grant', 'Invalid grant: account not found');
  if (sa.kid && head.kid !== undefined && head.kid !== sa.kid) return tokenError(res, 400, 'invalid_grant', 'Invalid JWT Signature.');
  const ok = crypto.verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), sa.key, Buffer.from(parts[2], 'base64url'));
  if (!ok) return tokenError(res, 400, 'invalid_grant', 'Invalid JWT Signature.');
  const aud = `http://${req.headers.host}/token`;
  if (claims.aud !== aud) return tokenError(res, 400, 'invalid_grant', `Invalid JWT: Failed audience check. The right audience is ${aud}`);
  const now = Math.floor(Date.now() / 1000);
  if (!Number.isInteger(claims.iat) || !Number.isInteger(claims.exp) || claims.exp <= now || claims.iat > now + 300 || claims.exp - claims.iat > 3600 || claims.exp <= claims.iat)
    return tokenError(res, 400, 'invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
  if (typeof claims.scope !== 'string' || !hasScope(claims.scope, STORAGE_SCOPES))
    return tokenError(res, 400, 'invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
  return issue(res, claims.scope);
}

// ---- buckets and objects ----

function bucketOr404(res, name) {
  const b = buckets.get(name);
  if (!b) gerror(res, 404, 'notFound', 'The specified bucket does not exist.');
  return b;
}

function noObject(res, bucket, name) {
  gerror(res, 404, 'notFound', `No such object: ${bucket}/${name}`);
}

function store(bucket, name, data, contentType) {
  const b = buckets.get(bucket), old = b.objects.get(name), now = new Date();
  const o = {
    data,
    generation: newGeneration(),
    metageneration: 1,
    contentType: contentType || 'application/octet-stream',
    md5: md5(data),
    crc32c: crc32c(data),
    created: now,
    updated: now,
  };
  void old;
  b.objects.set(name, o);
  return o;
}

// The object a request names, honouring ?generation=.
function liveObject(b, name, q) {
  const o = b.objects.get(name);
  if (o && q.get('generation') !== null && q.get('generation') !== String(o.generation)) return undefined;
  return o;
}

function list(res, bucket, b, q) {
  const prefix = q.get('prefix') || '', delim = q.get('delimiter') || '';
  const max = Math.min(Number(q.get('maxResults') || 1000) || 1000, 1000);
  const start = q.get('startOffset'), end = q.get('endOffset');
  let after = null, skip = null;
  if (q.get('pageToken')) {
    const t = b64json(q.get('pageToken'));
    if (!t || typeof t.after !== 'string') return gerror(res, 400, 'invalid', 'Invalid page token.');
    after = t.after;
    skip = t.skip || null;
  }
  const names = [...b.objects.keys()].filter((n) => n.startsWith(prefix)).sort(byName);
  const items = [], prefixes = [];
  let count = 0, next = null, last = null, lastPrefix = null;
  for (const n of names) {
    if (after !== null && byName(n, after) <= 0) continue;
    if (skip && n.startsWith(skip)) continue;
    if (start && byName(n, start) < 0) continue;
    if (end && byName(n, end) >= 0) continue;
    const rest = n.slice(prefix.length), at = delim ? rest.indexOf(delim) : -1;
    const p = at >= 0 ? prefix + rest.slice(0, at + delim.length) : null;
    if (p && p === lastPrefix) {
      last = n;
      continue;
    }
    if (count === max) {
      next = Buffer.from(JSON.stringify({ after: last, skip: lastPrefix })).toString('base64url');
      break;
    }
    if (p) {
      prefixes.push(p);
      lastPrefix = p;
    } else {
      items.push(resource(bucket, n, b.objects.get(n)));
    }
    count++;
    last = n;
  }
  const out = { kind: 'storage#objects' };
  if (next) out.nextPageToken = next;
  if (prefixes.length) out.prefixes = prefixes;
  if (items.length) out.items = items;
  send(res, 200, out);
}

function media(res, o, head) {
  const h = {
    'Content-Type': o.contentType,
    'X-Goog-Generation': String(o.generation),
    'X-Goog-Metageneration': String(o.metageneration),
    'X-Goog-Hash': `crc32c=${o.crc32c},md5=${o.md5}`,
    'X-Goog-Stored-Content-Length': String(o.data.length),
    'X-Goog-Stored-Content-Encoding': 'identity',
    'Last-Modified': o.updated.toUTCString(),
    ETag: `"${Buffer.from(o.md5, 'base64').toString('hex')}"`,
  };
  send(res, 200, head ? '' : o.data, Object.assign(h, head ? { 'Content-Length': o.data.length } : {}));
}

// multipart/related: [metadata JSON, media] (as Google's clients send it).
function multipart(req, body) {
  const m = /boundary="?([^";]+)"?/.exec(req.headers['content-type'] || '');
  if (!/^multipart\/related/i.test(req.headers['content-type'] || '') || !m) return null;
  const sep = Buffer.from(`--${m[1]}`), parts = [];
  let at = body.indexOf(sep);
  while (at >= 0) {
    const from = at + sep.length;
    if (body.slice(from, from + 2).toString() === '--') break;
    const nextAt = body.indexOf(sep, from);
    if (nextAt < 0) return null;
    let part = body.slice(from, nextAt);
    if (part.slice(0, 2).toString() === '\r\n') part = part.slice(2);
    if (part.slice(-2).toString() === '\r\n') part = part.slice(0, -2);
    const hEnd = part.indexOf('\r\n\r\n');
    if (hEnd < 0) return null;
    const headers = {};
    for (const line of part.slice(0, hEnd).toString().split('\r\n')) {
      const c = line.indexOf(':');
      if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
    }
    parts.push({ headers, data: part.slice(hEnd + 4) });
    at = nextAt;
  }
  return parts.length === 2 ? parts : null;
}

function upload(req, res, bucket, q, body) {
  const b = bucketOr404(res, bucket);
  if (!b) return;
  const type = q.get('uploadType');
  let name = q.get('name'), data = body, contentType = req.headers['content-type'], meta = {};
  if (type === 'multipart') {
    const parts = multipart(req, body);
    if (!parts) return gerror(res, 400, 'invalid', 'Invalid multipart request.');
    try {
      meta = JSON.parse(parts[0].data.toString('utf8'));
    } catch (e) {
      return gerror(res, 400, 'parseError', 'Parse Error');
    }
    name = meta.name || name;
    data = parts[1].data;
    contentType = meta.contentType || parts[1].headers['content-type'];
    if (meta.md5Hash && meta.md5Hash !== md5(data))
      return gerror(res, 400, 'invalid', `Provided MD5 hash "${meta.md5Hash}" doesn't match calculated MD5 hash "${md5(data)}".`);
    if (meta.crc32c && meta.crc32c !== crc32c(data))
      return gerror(res, 400, 'invalid', `Provided CRC32C "${meta.crc32c}" doesn't match calculated CRC32C "${crc32c(data)}".`);
  } else if (type === 'resumable') {
    return gerror(res, 501, 'notImplemented', 'uploadType=resumable is not implemented by this fake');
  } else if (type !== 'media') {
    return gerror(res, 400, 'invalid', `Invalid upload type: ${type}`);
  }
  if (!name) return gerror(res, 400, 'required', 'Required');
  if (!preconditions(q, b.objects.get(name), false)) return conditionNotMet(res);
  const o = store(bucket, name, data, contentType);
  send(res, 200, resource(bucket, name, o));
}

// rewrite and copy: POST /storage/v1/b/B/o/SRC/{rewriteTo,copyTo}/b/B2/o/DST
function rewrite(res, kind, sb, sname, db, dname, q) {
  const s = bucketOr404(res, sb);
  if (!s) return;
  const d = bucketOr404(res, db);
  if (!d) return;
  const src = liveObject(s, sname, new URLSearchParams(q.get('sourceGeneration') ? `generation=${q.get('sourceGeneration')}` : ''));
  if (!src) return noObject(res, sb, sname);
  if (!preconditions(q, src, true)) return conditionNotMet(res);
  if (kind === 'rewriteTo') {
    const size = src.data.length;
    const step = Number(q.get('maxBytesRewrittenPerCall')) || cfg.rewriteChunk;
    let done = 0;
    if (q.get('rewriteToken')) {
      const t = b64json(q.get('rewriteToken'));
      if (!t || t.src !== `${sb}/${sname}/${src.generation}` || t.dst !== `${db}/${dname}`)
        return gerror(res, 400, 'invalid', 'Invalid rewrite token.');
      done = t.done;
    }
    if (size - done > step) {
      done += step;
      const token = Buffer.from(JSON.stringify({ src: `${sb}/${sname}/${src.generation}`, dst: `${db}/${dname}`, done })).toString('base64url');
      return send(res, 200, { kind: 'storage#rewriteResponse', totalBytesRewritten: String(done), objectSize: String(size), done: false, rewriteToken: token });
    }
  }
  if (!preconditions(q, d.objects.get(dname), false)) return conditionNotMet(res);
  const o = store(db, dname, Buffer.from(src.data), src.contentType);
  const r = resource(db, dname, o);
  if (kind === 'copyTo') return send(res, 200, r);
  send(res, 200, { kind: 'storage#rewriteResponse', totalBytesRewritten: String(src.data.length), objectSize: String(src.data.length), done: true, resource: r });
}

function storage(req, res, segs, q, body) {
  // segs: after /storage/v1/
  const m = req.method;
  if (segs[0] !== 'b') return gerror(res, 404, 'notFound', 'Not Found');
  if (segs.length === 1) {
    if (m !== 'POST') return gerror(res, 405, 'methodNotAllowed', 'Method not allowed');
    let meta;
    try {
      meta = JSON.parse(body.toString('utf8'));
    } catch (e) {
      return gerror(res, 400, 'parseError', 'Parse Error');
    }
    if (!meta.name) return gerror(res, 400, 'required', 'Required');
    if (buckets.has(meta.name)) return gerror(res, 409, 'conflict', 'Your previous request to create the named bucket succeeded and you already own it.');
    buckets.set(meta.name, { created: new Date(), objects: new Map() });
    return send(res, 200, { kind: 'storage#bucket', id: meta.name, name: meta.name });
  }
  const bucket = segs[1];
  if (segs.length === 2) {
    const b = bucketOr404(res, bucket);
    if (!b) return;
    if (m === 'GET') return send(res, 200, { kind: 'storage#bucket', id: bucket, name: bucket, timeCreated: b.created.toISOString(), location: 'US', storageClass: 'STANDARD' });
    if (m === 'DELETE') {
      if (b.objects.size) return gerror(res, 409, 'conflict', 'The bucket you tried to delete is not empty.');
      buckets.delete(bucket);
      return send(res, 204);
    }
    return gerror(res, 405, 'methodNotAllowed', 'Method not allowed');
  }
  if (segs[2] !== 'o') return gerror(res, 404, 'notFound', 'Not Found');
  const b = bucketOr404(res, bucket);
  if (!b) return;
  if (segs.length === 3) {
    if (m !== 'GET') return gerror(res, 405, 'methodNotAllowed', 'Method not allowed');
    return list(res, bucket, b, q);
  }
  const name = segs[3];
  if (segs.length === 9 && (segs[4] === 'rewriteTo' || segs[4] === 'copyTo') && segs[5] === 'b' && segs[7] === 'o') {
    if (m !== 'POST') return gerror(res, 405, 'methodNotAllowed', 'Method not allowed');
    return rewrite(res, segs[4], bucket, name, segs[6], segs[8], q);
  }
  if (segs.length !== 4 || !name) return gerror(res, 404, 'notFound', 'Not Found');
  const o = liveObject(b, name, q);
  if (m === 'GET' || m === 'HEAD') {
    if (!o) return noObject(res, bucket, name);
    if (q.get('ifGenerationNotMatch') !== null && q.get('ifGenerationNotMatch') === String(o.generation)) return send(res, 304);
    if (!preconditions(q, o, false)) return conditionNotMet(res);
    if (q.get('alt') === 'media') return media(res, o, m === 'HEAD');
    return send(res, 200, resource(bucket, name, o));
  }
  if (m === 'DELETE') {
    if (!o) return noObject(res, bucket, name);
    if (!preconditions(q, o, false)) return conditionNotMet(res);
    b.objects.delete(name);
    return send(res, 204);
  }
  return gerror(res, 405, 'methodNotAllowed', 'Method not allowed');
}

// ---- test controls ----

function control(req, res, path, body) {
  const json = () => JSON.parse(body.toString('utf8') || 'null');
  if (path === '/_fake/log' && req.method === 'GET') return send(res, 200, log);
  if (path === '/_fake/log' && req.method === 'DELETE') {
    log = [];
    return send(res, 204);
  }
  if (path === '/_fake/fail' && req.method === 'POST') {
    faults = json().map((f) => Object.assign({ times: 1 }, f));
    return send(res, 204);
  }
  if (path === '/_fake/config' && req.method === 'POST') {
    Object.assign(cfg, json());
    return send(res, 204);
  }
  return send(res, 404, { error: 'no such control' });
}

// ---- the server ----

function segments(pathname) {
  return pathname.split('/').map((s) => {
    try {
      return decodeURIComponent(s);
    } catch (e) {
      return null;
    }
  });
}

function handle(req, res, body) {
  const u = new URL(req.url, 'http://fake');
  const path = u.pathname, q = u.searchParams;
  if (path.startsWith('/_fake/')) return control(req, res, path, body);
  const verdict = bearer(req);
  const entry = { method: req.method, path: u.pathname, query: u.search, auth: verdict === 'none' ? 'none' : verdict === 'invalid' ? 'invalid' : 'valid' };
  log.push(entry);
  const fault = faults.find((f) => f.times > 0 && (!f.method || f.method === req.method) && (!f.path || path.includes(f.path)));
  let after = null;
  if (fault) {
    fault.times--;
    entry.fault = fault.action;
    if (fault.action === 'status') return gerror(res, fault.status || 503, 'backendError', 'Backend Error');
    if (fault.action === 'drop') return req.socket.destroy();
    after = fault.action; // 'lose' or 'cut': carried out, then the answer is broken
  }
  if (after) {
    const realWrite = res.writeHead.bind(res);
    res.writeHead = (status, headers) => {
      res.fakeHead = [status, headers];
      return res;
    };
    res.end = (data) => {
      if (after === 'lose') return req.socket.destroy();
      realWrite(res.fakeHead[0], res.fakeHead[1]);
      const buf = data ? Buffer.from(data) : Buffer.alloc(0);
      res.write(buf.slice(0, Math.floor(buf.length / 2)), () => req.socket.destroy());
      return res;
    };
  }
  if (path === '/token' && req.method === 'POST') return tokenEndpoint(req, res, body);
  const isUpload = path.startsWith('/upload/storage/v1/');
  if (!isUpload && !path.startsWith('/storage/v1/')) return gerror(res, 404, 'notFound', 'Not Found');
  if (cfg.auth) {
    if (verdict === 'none')
      return gerror(res, 401, 'required', 'Anonymous caller does not have storage.objects.get access to the Google Cloud Storage object. Permission \'storage.objects.get\' denied on resource (or it may not exist).', { locationType: 'header', location: 'Authorization' });
    if (verdict === 'invalid') return gerror(res, 401, 'authError', 'Invalid Credentials', { locationType: 'header', location: 'Authorization' });
    if (!hasScope(verdict.scope, STORAGE_SCOPES)) return gerror(res, 403, 'insufficientPermissions', 'Request had insufficient authentication scopes.');
    if (req.method !== 'GET' && req.method !== 'HEAD' && !hasScope(verdict.scope, WRITE_SCOPES))
      return gerror(res, 403, 'insufficientPermissions', 'Request had insufficient authentication scopes.');
  }
  const segs = segments(path.slice(isUpload ? '/upload/storage/v1/'.length : '/storage/v1/'.length));
  if (segs.includes(null)) return gerror(res, 400, 'invalid', 'Invalid escape in the path.');
  if (isUpload) {
    if (req.method !== 'POST' || segs.length !== 3 || segs[0] !== 'b' || segs[2] !== 'o') return gerror(res, 404, 'notFound', 'Not Found');
    return upload(req, res, segs[1], q, body);
  }
  return storage(req, res, segs, q, body);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    try {
      handle(req, res, Buffer.concat(chunks));
    } catch (e) {
      process.stderr.write(`gcsfake: ${e.stack}\n`);
      if (!res.headersSent) gerror(res, 500, 'internalError', 'Internal Error');
    }
  });
});
server.keepAliveTimeout = 30000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`);
});
setTimeout(() => process.exit(0), cfg.lifetime * 1000).unref();
if (cfg.stdin) {
  process.stdin.on('data', () => {});
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
}
