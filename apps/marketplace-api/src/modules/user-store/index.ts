/**
 * The user store's public entry: the users and their one-time tokens, which the account modules
 * (auth, my account, email codes, admin users) read and change inside their own transactions.
 */
import { attemptCode, deleteTokens, findLiveToken, findLiveTokenByHash, issueToken, redeemEmailTokenByHash, redeemTokenByHash } from './user-tokens.repository.js';
import { emailTakenByAnother, findProfile, findUserByEmail, findUserById, revokeUserSessions, sessionStartedAt, updateUser } from './users.repository.js';

export { accountSessions } from './users.repository.js';
export { AuthPayload, mediaUrl, presentUser, UserResponse } from './users.schemas.js';
export { auditUser, createUsersService, type NewAccount, type UsersService } from './users.service.js';

/** A user's row, profile, sessions and e-mail address. */
export const userRecords = { emailTakenByAnother, findProfile, findUserByEmail, findUserById, revokeUserSessions, sessionStartedAt, updateUser };

/** One-time tokens and codes (verification, e-mail change, password reset, invitations). */
export const tokenRecords = { attemptCode, deleteTokens, findLiveToken, findLiveTokenByHash, issueToken, redeemEmailTokenByHash, redeemTokenByHash };
