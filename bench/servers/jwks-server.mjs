// A stand-in identity provider for the bench: one RS256 key made by jose, its public half served as a
// key set at /jwks, and a JWT signed with it for JWT_USER (scope plants:read, audience JWT_AUDIENCE,
// an hour's expiry), printed with the port: {"port": …, "token": "…"}. No discovery: the server under
// test is given JWT_JWKS_URL. JWT_USERS (comma-separated) and JWT_TOKENS_FILE: one JWT per user, written to
// that file one a line in the same order, before the port is printed (the realistic mix's users).
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

const { privateKey, publicKey } = await generateKeyPair('RS256');
const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' };
const sign = (sub, scope) => new SignJWT({ sub, scope })
  .setProtectedHeader({ alg: 'RS256', kid: 'bench', typ: 'JWT' })
  .setIssuer('https://idp.bench.example/')
  .setAudience(process.env.JWT_AUDIENCE)
  .setIssuedAt()
  .setExpirationTime('1h')
  .sign(privateKey);
const token = await sign(process.env.JWT_USER, 'plants:read');
if (process.env.JWT_USERS && process.env.JWT_TOKENS_FILE) {
  const tokens = [];
  for (const user of process.env.JWT_USERS.split(',')) tokens.push(await sign(user, 'plants:read plants:write'));
  writeFileSync(process.env.JWT_TOKENS_FILE, `${tokens.join('\n')}\n`);
}
const body = JSON.stringify({ keys: [jwk] });
const server = http.createServer((req, res) => {
  res.writeHead(req.url === '/jwks' ? 200 : 404, { 'content-type': 'application/jwk-set+json', 'cache-control': 'max-age=3600' });
  res.end(req.url === '/jwks' ? body : '');
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port, token })));
