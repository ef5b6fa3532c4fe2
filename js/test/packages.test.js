// Both packages are packaged as the ecosystem expects: package.json's fields, no dependencies, a
// version in step with the Go module's tags, and an npm pack tarball (made offline) holding
// exactly the files it should, which work once unpacked as an installed package would be.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { repoRoot } from '../testing/mediajobs.js';

const run = promisify(execFile);

const packages = {
  validator: {
    name: '@mediajobs/validator',
    goModule: 'validator',
    files: ['LICENSE', 'README.md', 'package.json', 'src/index.d.ts', 'src/index.js', 'src/wasi.js', 'validator.wasm'],
    // The unpacked package runs with its own validator.wasm.
    async check(entry) {
      const { createValidator } = await import(entry);
      const v = await createValidator();
      assert.equal((await v.validate('ffmpeg -i in.mp4 out.webm')).inferredOutputFormat, 'webm');
    },
  },
  client: {
    name: '@mediajobs/client',
    goModule: 'contracts',
    files: ['LICENSE', 'README.md', 'package.json', 'src/index.d.ts', 'src/index.js', 'src/operations.gen.d.ts', 'src/operations.gen.js'],
    async check(entry) {
      const { Client, operations } = await import(entry);
      assert.equal(typeof new Client({ baseUrl: 'http://127.0.0.1:1' }).submitJob, 'function');
      assert.ok(Object.keys(operations).length >= 40);
    },
  },
};

// goVersion is the version of the Go module's newest tag (<module>/vX.Y.Z), 0.0.0 before the
// first one, as Go's pseudo-versions count from v0.0.0.
async function goVersion(module) {
  const { stdout } = await run('git', ['tag', '--list', `${module}/v*`, '--sort=-v:refname'], { cwd: repoRoot });
  const newest = stdout.split('\n').find((t) => t.trim() !== '');
  return newest ? newest.trim().slice(`${module}/v`.length) : '0.0.0';
}

for (const [dir, want] of Object.entries(packages)) {
  describe(want.name, () => {
    const root = join(repoRoot, 'js', dir);

    test('package.json', async () => {
      const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
      assert.equal(pkg.name, want.name);
      assert.equal(pkg.type, 'module');
      assert.equal(pkg.license, 'Apache-2.0');
      assert.equal(pkg.types, './src/index.d.ts');
      assert.deepEqual(pkg.exports['.'], { types: './src/index.d.ts', default: './src/index.js' });
      assert.equal(pkg.engines.node, '>=18');
      for (const field of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies']) {
        assert.equal(pkg[field], undefined, `${field}: the package has no dependencies`);
      }
      assert.equal(pkg.version, await goVersion(want.goModule), `the version follows the tags of the Go module ${want.goModule}`);
    });

    test('npm pack holds exactly its files, and they work unpacked', async () => {
      const out = await mkdtemp(join(tmpdir(), 'mediajobs-pack-'));
      try {
        const { stdout } = await run('npm', ['pack', '--json', '--offline', '--pack-destination', out], { cwd: root });
        const [info] = JSON.parse(stdout.slice(stdout.indexOf('[')));
        assert.deepEqual(info.files.map((f) => f.path).sort(), want.files);
        const { stdout: listing } = await run('tar', ['-tzf', join(out, info.filename)]);
        assert.deepEqual(listing.split('\n').filter(Boolean).map((p) => p.replace(/^package\//, '')).sort(), want.files);
        // Installed as npm would: node_modules/<name>, imported by its exports.
        const installed = join(out, 'node_modules', ...want.name.split('/'));
        await mkdir(installed, { recursive: true });
        await run('tar', ['-xzf', join(out, info.filename), '-C', installed, '--strip-components=1']);
        const pkg = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8'));
        await want.check(pathToFileURL(join(installed, pkg.exports['.'].default)).href);
      } finally {
        await rm(out, { recursive: true, force: true });
      }
    });
  });
}
