// Checks the Kubernetes manifests against the apps they deploy, without a cluster:
//   node --test infra/k8s/            (after `pnpm build`: the commands must point at built files)
// Every file parses; kinds and API versions are known; images, ports, probe paths, environment
// variable names and commands match the app; the kustomization lists every manifest but the
// example Secret, whose values are all placeholders. With kubectl on the PATH, `kubectl kustomize`
// must also render each directory.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const K8S = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(K8S, '..', '..');

/** What each app listens on and answers health checks at (DESIGN.md §3, the apps' route prefixes; packages/http/src/health.ts). */
const APPS = {
  'marketplace-api': { port: 8000, health: '/api/v1/health', files: ['configmap.yaml', 'secret.example.yaml', 'deployment.yaml', 'service.yaml', 'migrate-job.yaml', 'kustomization.yaml'] },
  'logtracker-api': { port: 8001, health: '/api/health', files: ['configmap.yaml', 'secret.example.yaml', 'deployment.yaml', 'service.yaml', 'migrate-job.yaml', 'retention-cronjob.yaml', 'kustomization.yaml'] },
};

/** The kinds these manifests may hold, with the API version each is served at. */
const KINDS = {
  ConfigMap: 'v1',
  Secret: 'v1',
  Service: 'v1',
  PersistentVolumeClaim: 'v1',
  Deployment: 'apps/v1',
  Job: 'batch/v1',
  CronJob: 'batch/v1',
  Kustomization: 'kustomize.config.k8s.io/v1beta1',
};

/** `runServer`'s limit on finishing requests in flight after SIGTERM (packages/http/src/run.ts). */
const SHUTDOWN_TIMEOUT_SECONDS = 10;

/** The documents of a YAML file and its syntax errors (reported by the first test, not while collecting). */
function load(file) {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  const errors = docs.flatMap((doc) => doc.errors.map((e) => `${file}: ${e.message}`));
  if (errors.length > 0) return { docs: [], errors };
  return { docs: docs.map((doc) => doc.toJS()).filter((doc) => doc !== null), errors };
}

/**
 * The environment variable names an app's configuration schema reads: the upper-case keys of the
 * zod object in apps/<app>/src/config.ts, plus the shared ones (`commonEnvShape` in packages/config).
 */
function configKeys(app) {
  const keysOf = (text) => [...text.matchAll(/^\s+([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]);
  const appSource = readFileSync(join(ROOT, 'apps', app, 'src', 'config.ts'), 'utf8');
  const appSchema = appSource.slice(appSource.indexOf('z.object({'), appSource.indexOf('\n});', appSource.indexOf('z.object({')));
  const common = readFileSync(join(ROOT, 'packages', 'config', 'src', 'index.ts'), 'utf8');
  const start = common.indexOf('export const commonEnvShape = {');
  const commonShape = common.slice(start, common.indexOf('\n};', start));
  assert.ok(appSchema.includes('...commonEnvShape'), `${app}: its schema no longer spreads commonEnvShape`);
  // Shapes the common one spreads from a function of the same file (`...metricsEnvShape()`).
  const spread = [...commonShape.matchAll(/\.\.\.(\w+)\(\)/g)].map(([, name]) => {
    const at = common.indexOf(`function ${name}() {`);
    assert.ok(at >= 0, `packages/config: no function ${name}`);
    return common.slice(at, common.indexOf('\n}', at));
  });
  const keys = new Set([...keysOf(appSchema), ...keysOf(commonShape), ...spread.flatMap(keysOf)]);
  assert.ok(keys.has('DATABASE_URL') && keys.has('PORT'), `${app}: could not read the schema's keys`);
  return keys;
}

/** Pod specs of a workload, with the manifest they come from. */
function podSpecs(docs) {
  const specs = [];
  for (const doc of docs) {
    if (doc.kind === 'Deployment' || doc.kind === 'Job') specs.push({ owner: doc, pod: doc.spec.template.spec, labels: doc.spec.template.metadata?.labels ?? {} });
    if (doc.kind === 'CronJob') specs.push({ owner: doc, pod: doc.spec.jobTemplate.spec.template.spec, labels: doc.spec.jobTemplate.spec.template.metadata?.labels ?? {} });
  }
  return specs;
}

/** Keys a manifest sets, commented-out optional ones included (they must be right when uncommented). */
function dataKeys(file, doc) {
  const values = doc.data ?? doc.stringData ?? {};
  const commented = [...readFileSync(file, 'utf8').matchAll(/^[ \t]+#[ \t]*([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]);
  return { values, keys: [...Object.keys(values), ...commented] };
}

function kubectlAvailable() {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

for (const [app, expected] of Object.entries(APPS)) {
  const dir = join(K8S, app);
  const appDir = join(ROOT, 'apps', app);

  describe(`infra/k8s/${app}`, () => {
    const yamlFiles = readdirSync(dir).filter((f) => f.endsWith('.yaml') || f.endsWith('.yml')).sort();
    const loaded = yamlFiles.map((f) => [f, load(join(dir, f))]);
    const parseErrors = loaded.flatMap(([, l]) => l.errors);
    const byFile = Object.fromEntries(loaded.map(([f, l]) => [f, l.docs]));
    const all = Object.values(byFile).flat();
    const resources = Object.entries(byFile)
      .filter(([f]) => f !== 'kustomization.yaml')
      .flatMap(([, docs]) => docs);
    const of = (kind) => resources.filter((d) => d.kind === kind);
    const keys = configKeys(app);
    const configMap = of('ConfigMap')[0] ?? {};
    const secret = of('Secret')[0] ?? {};

    it('has the expected files, each parsing into known kinds with their required fields', () => {
      assert.deepEqual(parseErrors, [], 'every file parses');
      assert.deepEqual(yamlFiles, [...expected.files].sort());
      for (const [file, docs] of Object.entries(byFile)) {
        assert.ok(docs.length > 0, `${file} is empty`);
        for (const doc of docs) {
          assert.ok(doc.kind in KINDS, `${file}: unknown kind ${doc.kind}`);
          assert.equal(doc.apiVersion, KINDS[doc.kind], `${file}: ${doc.kind} apiVersion`);
          if (doc.kind === 'Kustomization') continue;
          assert.match(doc.metadata?.name ?? '', /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, `${file}: metadata.name`);
          assert.equal(doc.metadata.labels?.['app.kubernetes.io/name'], app, `${file}: app.kubernetes.io/name label`);
          if (['Deployment', 'Job', 'CronJob', 'Service', 'PersistentVolumeClaim'].includes(doc.kind)) assert.ok(doc.spec, `${file}: spec`);
        }
      }
      const names = all.filter((d) => d.kind !== 'Kustomization').map((d) => `${d.kind}/${d.metadata.name}`);
      assert.equal(new Set(names).size, names.length, 'two resources share a kind and a name');
      assert.equal(of('Deployment').length, 1);
      assert.equal(of('Service').length, 1);
      assert.equal(of('ConfigMap').length, 1);
      assert.equal(of('Secret').length, 1);
    });

    it('lists every manifest in kustomization.yaml except the example Secret, and maps the image', () => {
      const [kustomization] = byFile['kustomization.yaml'];
      const listed = [...kustomization.resources].sort();
      const wanted = yamlFiles.filter((f) => f !== 'kustomization.yaml' && f !== 'secret.example.yaml').sort();
      assert.deepEqual(listed, wanted);
      assert.deepEqual(
        kustomization.images.map((i) => i.name),
        [app],
      );
      assert.ok(kustomization.images[0].newName.endsWith(`/${app}`), 'the image is pushed under the app name');
    });

    it('runs the app image, with commands the build produces', () => {
      const specs = podSpecs(resources);
      assert.ok(specs.length >= 2, 'a Deployment and a migration Job at least');
      for (const { owner, pod } of specs) {
        for (const container of pod.containers) {
          const where = `${owner.kind}/${owner.metadata.name}`;
          assert.equal(container.image, app, `${where}: image (kustomization.yaml maps it to the registry)`);
          assert.equal(container.command?.[0], 'node', `${where}: command`);
          const script = container.command[1];
          assert.match(script, /^dist\/.+\.js$/, `${where}: runs a built file`);
          const source = join(appDir, script.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts'));
          assert.ok(existsSync(source), `${where}: no source ${source}`);
          assert.ok(existsSync(join(appDir, script)), `${where}: ${script} missing in apps/${app} (run \`pnpm build\` first)`);
        }
      }
      const job = of('Job').find((j) => j.metadata.name === `${app}-migrate`);
      assert.ok(job, 'the migration Job');
      assert.deepEqual(job.spec.template.spec.containers[0].command, ['node', 'dist/cli/migrate.js']);
      assert.ok(['Never', 'OnFailure'].includes(job.spec.template.spec.restartPolicy));
      assert.ok(Number.isInteger(job.spec.backoffLimit) && Number.isInteger(job.spec.activeDeadlineSeconds), 'the Job is bounded');
    });

    it('sets only variables the configuration schema reads, from a ConfigMap and a Secret every pod uses', () => {
      for (const [doc, file] of [
        [configMap, 'configmap.yaml'],
        [secret, 'secret.example.yaml'],
      ]) {
        const { values, keys: set } = dataKeys(join(dir, file), doc);
        for (const key of set) assert.ok(keys.has(key), `${file}: ${key} is not a variable of apps/${app}/src/config.ts`);
        for (const [key, value] of Object.entries(values)) assert.equal(typeof value, 'string', `${file}: ${key} must be a string`);
      }
      for (const { owner, pod } of podSpecs(resources)) {
        for (const container of pod.containers) {
          const where = `${owner.kind}/${owner.metadata.name}`;
          for (const { name } of container.env ?? []) assert.ok(keys.has(name), `${where}: ${name} is not a variable of the app`);
          assert.deepEqual(
            (container.envFrom ?? []).map((e) => e.configMapRef?.name ?? e.secretRef?.name),
            [configMap.metadata.name, secret.metadata.name],
            `${where}: environment from the ConfigMap and the Secret`,
          );
        }
      }
    });

    it('keeps the example Secret an example', () => {
      assert.equal(secret.type, 'Opaque');
      for (const name of ['DATABASE_URL', 'JWT_SECRET']) assert.ok(name in secret.stringData, `the Secret holds ${name}`);
      for (const [key, value] of Object.entries(secret.stringData)) {
        assert.match(value, /^REPLACE-ME/, `secret.example.yaml: ${key} must be a placeholder`);
      }
      // A placeholder must not pass for a value: the app refuses these at start-up.
      assert.ok(secret.stringData.JWT_SECRET.length < 32);
      assert.doesNotMatch(secret.stringData.DATABASE_URL, /^postgres(ql)?:\/\//);
    });

    it('runs two replicas on the app port, probed on the health route, that do not migrate at start-up', () => {
      const [deployment] = of('Deployment');
      assert.equal(deployment.spec.replicas, 2);
      assert.equal(configMap.data.PORT, String(expected.port));
      const pod = deployment.spec.template.spec;
      const [container] = pod.containers;
      // /metrics on its own port (METRICS_PORT), announced to Prometheus, never behind the Service.
      assert.deepEqual(container.ports.map((p) => [p.name, p.containerPort]), [['http', expected.port], ['metrics', Number(configMap.data.METRICS_PORT)]]);
      const annotations = deployment.spec.template.metadata.annotations ?? {};
      assert.equal(annotations['prometheus.io/port'], configMap.data.METRICS_PORT);
      assert.equal(annotations['prometheus.io/path'], '/metrics');
      // Readiness on the route that checks the database and its schema; liveness and start-up on
      // the one that never touches the database.
      const paths = { readinessProbe: `${expected.health}/ready`, livenessProbe: `${expected.health}/live`, startupProbe: `${expected.health}/live` };
      for (const [probe, path] of Object.entries(paths)) {
        assert.equal(container[probe]?.httpGet?.path, path, `${probe} path`);
        assert.ok([`http`, expected.port].includes(container[probe].httpGet.port), `${probe} port`);
      }
      const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
      assert.equal(env.MIGRATE_ON_START, 'false');
      if (app === 'logtracker-api') assert.equal(env.RETENTION_INTERVAL_MINUTES, '0', 'the CronJob runs retention, not the replicas');

      // Selector, pod labels and the Service agree.
      const selector = deployment.spec.selector.matchLabels;
      for (const [k, v] of Object.entries(selector)) assert.equal(deployment.spec.template.metadata.labels[k], v);
      const [service] = of('Service');
      assert.deepEqual(service.spec.selector, selector);
      assert.ok(service.spec.ports.every((p) => p.targetPort === 'http' || p.targetPort === expected.port));
      for (const other of podSpecs(resources).filter((s) => s.owner !== deployment)) {
        assert.ok(
          Object.entries(selector).some(([k, v]) => other.labels[k] !== v),
          `${other.owner.metadata.name}: its pods must not match the Service`,
        );
      }

      // Graceful termination: the preStop pause plus the app's own shutdown limit fit in the grace period.
      const pause = Number(container.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
      assert.ok(pod.terminationGracePeriodSeconds > pause + SHUTDOWN_TIMEOUT_SECONDS, 'terminationGracePeriodSeconds');
    });

    it('runs every pod as non-root on a read-only root filesystem, with bounded resources and a writable /tmp', () => {
      const quantity = (v) => {
        const m = /^(\d+(?:\.\d+)?)(m|Mi|Gi)?$/.exec(String(v));
        assert.ok(m, `quantity ${v}`);
        return Number(m[1]) * ({ m: 0.001, Mi: 2 ** 20, Gi: 2 ** 30 }[m[2]] ?? 1);
      };
      for (const { owner, pod } of podSpecs(resources)) {
        const where = `${owner.kind}/${owner.metadata.name}`;
        assert.equal(pod.securityContext?.runAsNonRoot, true, `${where}: runAsNonRoot`);
        // The image's user is `node` (not numeric): the kubelet needs a uid to check runAsNonRoot.
        assert.ok(Number.isInteger(pod.securityContext.runAsUser) && pod.securityContext.runAsUser > 0, `${where}: runAsUser`);
        assert.equal(pod.automountServiceAccountToken, false, `${where}: no service account token`);
        const volumes = Object.fromEntries((pod.volumes ?? []).map((v) => [v.name, v]));
        for (const container of pod.containers) {
          assert.equal(container.securityContext?.readOnlyRootFilesystem, true, `${where}: readOnlyRootFilesystem`);
          assert.equal(container.securityContext.allowPrivilegeEscalation, false, `${where}: allowPrivilegeEscalation`);
          const tmp = container.volumeMounts?.find((m) => m.mountPath === '/tmp');
          assert.ok(tmp && volumes[tmp.name]?.emptyDir, `${where}: /tmp on an emptyDir`);
          for (const resource of ['cpu', 'memory']) {
            const request = container.resources?.requests?.[resource];
            const limit = container.resources?.limits?.[resource];
            assert.ok(request && limit, `${where}: ${resource} request and limit`);
            assert.ok(quantity(request) <= quantity(limit), `${where}: ${resource} request above its limit`);
          }
          // A 2-core node: no container may ask for more than it has.
          assert.ok(quantity(container.resources.limits.cpu) <= 2, `${where}: cpu limit`);
        }
      }
    });

    if (app === 'marketplace-api') {
      it('keeps uploads (STORAGE_DIR) on a PersistentVolumeClaim', () => {
        const [deployment] = of('Deployment');
        const pod = deployment.spec.template.spec;
        const mount = pod.containers[0].volumeMounts.find((m) => m.mountPath === configMap.data.STORAGE_DIR);
        assert.ok(mount, 'STORAGE_DIR is a mount path');
        const volume = pod.volumes.find((v) => v.name === mount.name);
        const claim = of('PersistentVolumeClaim').find((c) => c.metadata.name === volume?.persistentVolumeClaim?.claimName);
        assert.ok(claim, 'the claim is defined beside the Deployment');
        assert.ok(claim.spec.resources.requests.storage);
        assert.equal(pod.securityContext.fsGroup, pod.securityContext.runAsGroup, 'the volume is writable by the app');
      });
    }

    if (app === 'logtracker-api') {
      it('runs retention hourly from a CronJob, never two at once', () => {
        const [cron] = of('CronJob');
        assert.match(cron.spec.schedule, /^\d{1,2} \* \* \* \*$/);
        assert.equal(cron.spec.concurrencyPolicy, 'Forbid');
        const [container] = cron.spec.jobTemplate.spec.template.spec.containers;
        assert.deepEqual(container.command, ['node', 'dist/cli/retention.js']);
        const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
        assert.equal(env.MIGRATE_ON_START, 'false', 'only the migration Job migrates');
      });
    }

    it('renders with kubectl kustomize', { skip: kubectlAvailable() ? false : 'kubectl is not installed' }, () => {
      const rendered = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
      const docs = parseAllDocuments(rendered).map((d) => d.toJS());
      const [kustomization] = byFile['kustomization.yaml'];
      const image = `${kustomization.images[0].newName}:${kustomization.images[0].newTag}`;
      const images = podSpecs(docs).flatMap(({ pod }) => pod.containers.map((c) => c.image));
      assert.ok(images.length > 0);
      assert.ok(images.every((i) => i === image), `images: ${images.join(', ')}`);
      assert.ok(!docs.some((d) => d.kind === 'Secret'), 'no Secret is rendered');
    });
  });
}
