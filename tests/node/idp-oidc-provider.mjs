// A real OpenID Provider (npm `oidc-provider`) on loopback, for the browser
// sign-in tests. Any login name signs in as `<login>@example.com` with a
// verified e-mail, through the library's built-in login and consent pages
// (devInteractions). Usage:
//
//   node tests/node/idp-oidc-provider.mjs [--port N] [--client-id ID]
//        [--client-secret S] --redirect-uri URL [--redirect-uri URL ...]
//
// Prints one JSON line `{"issuer": "http://127.0.0.1:PORT", "client_id", "client_secret"}`
// on stdout once it listens; logs go to stderr. Stops when stdin closes, so a
// test that dies never leaves it running.
//
// The client is registered as a native application: RFC 8252 §7.3 lets a
// loopback redirect URI use any port, and oidc-provider honours that, so
// `http://127.0.0.1/v1/auth/op/callback` matches the hds test server on
// whatever port it bound.

import http from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

// stdout carries exactly one line, the JSON below; the reader may stop
// listening after it, so everything else (oidc-provider's notices use
// console.log) goes to stderr.
console.log = console.error;
console.info = console.error;
process.stdout.on('error', () => {});

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    'client-id': { type: 'string', default: 'hds-test' },
    'client-secret': { type: 'string', default: 'hds-test-secret-0123456789abcdef' },
    'redirect-uri': { type: 'string', multiple: true, default: [] },
  },
});
if (args['redirect-uri'].length === 0) {
  console.error('at least one --redirect-uri is required');
  process.exit(2);
}

// Bind first: the issuer URL must carry the port the OS chose.
const server = http.createServer();
await new Promise((resolve) => server.listen(Number(args.port), '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: args['client-id'],
    client_secret: args['client-secret'],
    application_type: 'native',
    redirect_uris: args['redirect-uri'],
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        // `updated_at` as Auth0 sends it (an RFC 3339 string, where the
        // standard says seconds since the epoch): hds reads neither it nor
        // `locale`, and must not refuse the sign-in over them.
        return {
          // The login `unverified` has an address the provider did not verify.
          sub: id, email: `${id}@example.com`, email_verified: id !== 'unverified', name: `Test ${id}`,
          updated_at: new Date().toISOString(),
          // The login `odd-locale` gets a locale of the wrong type.
          locale: id === 'odd-locale' ? 5 : 'en-US',
        };
      },
    };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'updated_at', 'locale'] },
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => true },
  // Without this the ID token carries only `sub` whenever an access token is
  // issued too; hds reads e-mail and name from the ID token.
  conformIdTokenClaims: false,
});
provider.on('server_error', (_ctx, err) => console.error('server_error', err));

server.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({
  issuer, client_id: args['client-id'], client_secret: args['client-secret'],
})}\n`);

process.stdin.resume();
process.stdin.on('end', () => server.close(() => process.exit(0)));
