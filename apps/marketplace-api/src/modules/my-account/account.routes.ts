import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, messageEnvelope } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import { IMAGE_TYPES, readMultipart } from '../../lib/uploads.js';
import { UserEnvelope } from '../auth/index.js';
import { presentUser } from '../user-store/index.js';
import { DeleteAccountBody, DeviceEnvelope, DeviceTokenBody, LangBody, presentDevice, UpdateMeBody } from './account.schemas.js';
import type { AccountService } from './account.service.js';

export function accountRoutes(deps: { account: AccountService }): FastifyPluginAsyncZod {
  return async (app) => {
    const security = [{ bearerAuth: [] }];

    app.get(
      '/auth/me',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'getMe',
          tags: ['account'],
          summary: 'The signed-in user, with its business profile for a prestataire',
          security,
          response: { 200: UserEnvelope, ...errorResponses(401, 429) },
        },
      },
      async (request) => {
        const { user, profile } = await deps.account.me(actorOf(request));
        return { data: presentUser(user, profile) };
      },
    );

    app.put(
      '/auth/me',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'updateMe',
          tags: ['account'],
          summary: 'Update name and phone at once; a new e-mail takes effect only once confirmed from the new address',
          description:
            'Fields left out are kept; `phone: null` removes the phone number. A new `email` needs `current_password` ' +
            '(an account without a password, made by social sign-in, must have signed in within the last 10 minutes). ' +
            'It is not applied at once: it is answered as `pending_email`, a link goes to the new address ' +
            '(confirmed through `GET /auth/verify-email` or `POST /auth/confirm-email`), and the current address is told, ' +
            'with a link that undoes the change (`POST /auth/revert-email-change`). Sending the current `email` again drops a pending change.',
          security,
          body: UpdateMeBody,
          response: { 200: UserEnvelope, ...errorResponses(400, 401, 403, 409, 422, 429) },
        },
      },
      async (request) => {
        const { first_name, last_name, phone, email, current_password } = request.body;
        const { user, profile, emailChangePending } = await deps.account.update(
          actorOf(request),
          { firstName: first_name, lastName: last_name, phone, email },
          { currentPassword: current_password },
        );
        const message = emailChangePending
          ? 'Profile updated; confirm the new e-mail address with the link sent to it'
          : 'Profile updated';
        return { data: presentUser(user, profile), message };
      },
    );

    app.post(
      '/auth/me/photo',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'updateMyPhoto',
          tags: ['account'],
          summary: 'Replace the profile photo (multipart field `photo`: JPEG, PNG or WebP)',
          consumes: ['multipart/form-data'],
          security,
          response: { 200: UserEnvelope, ...errorResponses(400, 401, 413, 422, 429) },
        },
      },
      async (request) => {
        const { files } = await readMultipart(request, { accept: IMAGE_TYPES, maxFiles: 1, acceptLabel: 'a JPEG, PNG or WebP image' });
        const photo = files.find((f) => f.field === 'photo');
        if (!photo) throw AppError.validation({ photo: ['Required: send the image in the `photo` field'] });
        const { user, profile } = await deps.account.setPhoto(actorOf(request), photo);
        return { data: presentUser(user, profile), message: 'Photo updated' };
      },
    );

    app.post(
      '/auth/me/device-token',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'registerDeviceToken',
          tags: ['account'],
          summary: 'Register a push target: a web-push subscription, or an FCM or APNs token',
          description:
            'A target already registered (by this user or another) is refreshed and moved to the caller: 200 instead of 201.',
          security,
          body: DeviceTokenBody,
          response: { 200: DeviceEnvelope, 201: DeviceEnvelope, ...errorResponses(400, 401, 422, 429) },
        },
      },
      async (request, reply) => {
        const { device, created } = await deps.account.registerDevice(actorOf(request), request.body);
        return reply.status(created ? 201 : 200).send({ data: presentDevice(device), message: created ? 'Device registered' : 'Device updated' });
      },
    );

    app.put(
      '/auth/me/lang',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'updateMyLang',
          tags: ['account'],
          summary: 'Choose the language of e-mails and notifications',
          security,
          body: LangBody,
          response: { 200: UserEnvelope, ...errorResponses(400, 401, 422, 429) },
        },
      },
      async (request) => {
        const { user, profile } = await deps.account.update(actorOf(request), { lang: request.body.lang });
        return { data: presentUser(user, profile), message: 'Language updated' };
      },
    );

    app.delete(
      '/auth/me',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'deleteMe',
          tags: ['account'],
          summary: 'Delete the account: personal data is erased and every session ends',
          description:
            'Confirm with `password`; an account without one (social sign-in) must have signed in within the last 15 minutes.',
          security,
          body: DeleteAccountBody,
          response: { 200: messageEnvelope, ...errorResponses(400, 401, 403, 409, 422, 429) },
        },
      },
      async (request) => {
        await deps.account.deleteAccount(actorOf(request), request.body?.password);
        return { message: 'Account deleted' };
      },
    );
  };
}
