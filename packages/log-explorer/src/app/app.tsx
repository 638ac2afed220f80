import { useCallback, useEffect, useState } from 'preact/hooks';
import { isAbort, setUnauthorizedHandler } from '../api/api.client';
import { currentUser, logout } from '../api/api.routes';
import type { User } from '../api/api.types';
import { SignIn } from '../auth/sign-in';
import { getToken, setToken } from '../auth/token.store';
import { Explorer } from './explorer';

/** Signed in (a token) or not: any 401 of the API, or a tail closed for an ended session, signs out. */
export function App() {
  const [token, setTokenState] = useState(getToken());
  const [user, setUser] = useState<User | null>(null);

  const signOutLocally = useCallback(() => {
    setToken(null);
    setTokenState(null);
    setUser(null);
  }, []);

  useEffect(() => setUnauthorizedHandler(signOutLocally), [signOutLocally]);

  useEffect(() => {
    if (!token) return;
    const abort = new AbortController();
    currentUser(abort.signal)
      .then(setUser)
      .catch((error: unknown) => {
        if (!isAbort(error)) setUser(null);
      });
    return () => abort.abort();
  }, [token]);

  const signOut = async () => {
    try {
      await logout();
    } catch {
      // The token is dropped whatever the server answers: the page signs out either way.
    }
    signOutLocally();
  };

  if (!token) {
    return (
      <SignIn
        onSignedIn={(signedIn, newToken) => {
          setToken(newToken);
          setUser(signedIn);
          setTokenState(newToken);
        }}
      />
    );
  }
  return <Explorer user={user} onSignOut={signOut} />;
}
