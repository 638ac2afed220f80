import { useState } from 'preact/hooks';
import { login } from '../api/api.routes';
import type { User } from '../api/api.types';

/** The sign-in form; the API's own message is shown when it refuses. */
export function SignIn({ onSignedIn }: { onSignedIn: (user: User, token: string) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const { user, token } = await login(email, password);
      onSignedIn(user, token);
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };

  return (
    <main class="signin">
      <form class="signin-form" data-testid="signin-form" onSubmit={submit}>
        <h1>Log explorer</h1>
        <label>
          E-mail
          <input
            data-testid="signin-email"
            type="email"
            autocomplete="username"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            data-testid="signin-password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        {error && (
          <p class="signin-error" data-testid="signin-error" role="alert">
            {error}
          </p>
        )}
        <button data-testid="signin-submit" type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
