// A loopback token issuer for the native sign-in tests: discovery, a JWKS, and
// ID tokens minted on request with whatever claims a test needs (Google's two
// issuer spellings, Apple's string booleans and hashed nonce, expired tokens,
// wrong audiences, tampered signatures). Also a token endpoint that behaves
// like Apple's (client_secret_post, ID token in the response) for the code
// exchange. Usage: `node tests/node/idp-mint.mjs [--port N]`.
//
// Prints one JSON line `{"issuer": "http://127.0.0.1:PORT"}` on stdout once it
// listens; stops when stdin closes.
//
//   GET  /.well-known/openid-configuration, GET /jwks
//   GET  /stats                        -> {"discovery": n, "jwks": n} fetch counts
//   POST /mint   {"claims", "tamper"?, "unsigned"?} -> {"id_token"}
//                iss, iat and exp default to this issuer, now and now + 10 min;
//                `tamper` flips one bit of the signature; `unsigned` gives alg none
//   POST /rotate                       -> {"kid"}: a new signing key, published at once
//   POST /codes  {"claims", "client_id", "client_secret", "redirect_uri"} -> {"code"}
//   POST /token  (form: grant_type=authorization_code, code, redirect_uri,
//                client_id, client_secret) -> {"access_token", "token_type", "id_token"}

import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';

import { SignJWT, UnsecuredJWT, exportJWK, generateKeyPair } from 'jose';

// stdout carries exactly one line, the JSON below; the reader may stop
// listening after it, so everything else (oidc-provider's notices use
// console.log) goes to stderr.
console.log = console.error;
console.info = console.error;
process.stdout.on('error', () => {});

const { values: args } = parseArgs({ options: { port: { type: 'string', default: '0' } } });

const server = http.createServer();
await new Promise((resolve) => server.listen(Number(args.port), '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const published = []; // public JWKs
let signing; // { kid, privateKey }
async function rotate() {
  const kid = `k${published.length + 1}-${randomBytes(4).toString('hex')}`;
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  published.push({ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' });
  signing = { kid, privateKey };
  return kid;
}
await rotate();

const stats = { discovery: 0, jwks: 0 };
const codes = new Map(); // code -> { claims, client_id, client_secret, redirect_uri }

async function mint({ claims = {}, tamper = false, unsigned = false }) {
  const now = Math.floor(Date.now() / 1000);
  const payload = { iss: issuer, iat: now, exp: now + 600, ...claims };
  if (unsigned) {
    return new UnsecuredJWT(payload).encode();
  }
  const token = await new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', kid: signing.kid, typ: 'JWT' })
    .sign(signing.privateKey);
  if (!tamper) {
    return token;
  }
  const [header, body, signature] = token.split('.');
  const bytes = Buffer.from(signature, 'base64url');
  bytes[bytes.length - 1] ^= 0x01;
  return `${header}.${body}.${bytes.toString('base64url')}`;
}

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function token(req, res) {
  const form = new URLSearchParams(await readBody(req));
  const grant = codes.get(form.get('code'));
  codes.delete(form.get('code')); // single use, like a real provider
  if (form.get('grant_type') !== 'authorization_code' || !grant) {
    return send(res, 400, { error: 'invalid_grant' });
  }
  // A grant made with "answer": "html503": a proxy's error page instead.
  if (grant.answer === 'html503') {
    res.writeHead(503, { 'content-type': 'text/html' });
    return res.end('<html><body><h1>503 Service Unavailable</h1></body></html>');
  }
  if (form.get('client_id') !== grant.client_id || form.get('client_secret') !== grant.client_secret) {
    return send(res, 401, { error: 'invalid_client' });
  }
  if (form.get('redirect_uri') !== grant.redirect_uri) {
    return send(res, 400, { error: 'invalid_grant', error_description: 'redirect_uri mismatch' });
  }
  const idToken = await mint({ claims: { aud: grant.client_id, ...grant.claims } });
  return send(res, 200, {
    access_token: randomBytes(16).toString('hex'), token_type: 'Bearer', expires_in: 3600, id_token: idToken,
  });
}

server.on('request', async (req, res) => {
  try {
    const { pathname } = new URL(req.url, issuer);
    if (req.method === 'GET' && pathname === '/.well-known/openid-configuration') {
      stats.discovery += 1;
      return send(res, 200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
        response_modes_supported: ['query', 'form_post'],
        subject_types_supported: ['pairwise'],
        id_token_signing_alg_values_supported: ['RS256'],
        scopes_supported: ['openid', 'email', 'name'],
        // Apple accepts only client_secret_post.
        token_endpoint_auth_methods_supported: ['client_secret_post'],
      });
    }
    if (req.method === 'GET' && pathname === '/jwks') {
      stats.jwks += 1;
      return send(res, 200, { keys: published });
    }
    if (req.method === 'GET' && pathname === '/stats') return send(res, 200, stats);
    if (req.method === 'POST' && pathname === '/mint') {
      return send(res, 200, { id_token: await mint(JSON.parse(await readBody(req) || '{}')) });
    }
    if (req.method === 'POST' && pathname === '/rotate') return send(res, 200, { kid: await rotate() });
    if (req.method === 'POST' && pathname === '/codes') {
      const code = randomBytes(16).toString('hex');
      codes.set(code, JSON.parse(await readBody(req)));
      return send(res, 200, { code });
    }
    if (req.method === 'POST' && pathname === '/token') return await token(req, res);
    return send(res, 404, { error: 'not_found' });
  } catch (err) {
    console.error(err);
    return send(res, 500, { error: 'server_error', error_description: String(err) });
  }
});

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.stdin.resume();
process.stdin.on('end', () => server.close(() => process.exit(0)));
