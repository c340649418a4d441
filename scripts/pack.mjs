// npm pack's prepack and postpack for the server (`node scripts/pack.mjs prepack|postpack`), as pinst
// does for postinstall. prepack builds, then takes the "prepare" script out of package.json for the
// tarball's sake; postpack puts package.json back byte for byte. "prepare" builds a checkout on
// `npm install`; in the tarball dist/ comes built and scripts/ is not there, yet npm 11 lists a
// non-registry dependency's prepare among the install scripts a project must review (allowScripts), and
// would fail running it. The copy kept meanwhile is restored first by the next pack if one failed.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const MANIFEST = 'package.json';
const KEPT = 'package.json.before-pack';

if (existsSync(KEPT)) renameSync(KEPT, MANIFEST);
if (process.argv[2] === 'prepack') {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
  const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
  delete manifest.scripts.prepare;
  copyFileSync(MANIFEST, KEPT);
  writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
} else if (process.argv[2] !== 'postpack') {
  console.error('usage: node scripts/pack.mjs prepack|postpack');
  process.exit(2);
}
