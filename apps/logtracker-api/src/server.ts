import { runServer } from '@repo/http';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';

await runServer({
  name: 'logtracker-api',
  build: async () => {
    const config = loadConfig();
    return { app: await buildApp(config), host: config.host, port: config.port };
  },
});
