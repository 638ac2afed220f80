export * from './users.js';
export * from './catalogue.js';
export * from './prestataires.js';
export * from './documents.js';
export * from './activity.js';
export * from './mail.js';
