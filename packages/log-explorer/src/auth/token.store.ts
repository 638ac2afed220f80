/**
 * The bearer token: in memory and in sessionStorage (so a reload keeps the session in this tab
 * only), never in a URL.
 */
const KEY = 'logtracker.token';

let token: string | null = readStored();

function readStored(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function getToken(): string | null {
  return token;
}

export function setToken(value: string | null): void {
  token = value;
  try {
    if (value) sessionStorage.setItem(KEY, value);
    else sessionStorage.removeItem(KEY);
  } catch {
    // Storage refused (private mode, quota): the token stays in memory for this page.
  }
}
