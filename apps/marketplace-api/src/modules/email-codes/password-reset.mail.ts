import { defineTemplate } from '../../integrations/mail/templates.js';

export const passwordResetLink = defineTemplate<{ firstName: string; url: string }>('password_reset_link', {
  fr: ({ firstName, url }) => ({
    subject: 'Réinitialisez votre mot de passe',
    paragraphs: [
      `Bonjour ${firstName},`,
      'Vous avez demandé à réinitialiser le mot de passe de votre compte. Ce lien est valable 60 minutes et ne peut servir qu’une fois.',
      "Si vous n'êtes pas à l'origine de cette demande, ignorez ce message : votre mot de passe reste inchangé.",
    ],
    action: { label: 'Choisir un nouveau mot de passe', url },
  }),
  en: ({ firstName, url }) => ({
    subject: 'Reset your password',
    paragraphs: [
      `Hello ${firstName},`,
      'You asked to reset the password of your account. This link is valid for 60 minutes and works once.',
      'If you did not ask for this, ignore this message: your password stays as it is.',
    ],
    action: { label: 'Choose a new password', url },
  }),
});

export const passwordResetOtp = defineTemplate<{ firstName: string; code: string }>('password_reset_otp', {
  fr: ({ firstName, code }) => ({
    subject: 'Votre code de réinitialisation du mot de passe',
    paragraphs: [
      `Bonjour ${firstName},`,
      `Votre code de réinitialisation : ${code}`,
      'Saisissez-le dans l’application pour choisir un nouveau mot de passe. Il est valable 10 minutes et ne peut servir qu’une fois.',
      "Si vous n'êtes pas à l'origine de cette demande, ignorez ce message : votre mot de passe reste inchangé.",
    ],
  }),
  en: ({ firstName, code }) => ({
    subject: 'Your password reset code',
    paragraphs: [
      `Hello ${firstName},`,
      `Your reset code: ${code}`,
      'Enter it in the app to choose a new password. It is valid for 10 minutes and works once.',
      'If you did not ask for this, ignore this message: your password stays as it is.',
    ],
  }),
});

/** Sent after a reset, so that a reset made by someone else does not go unnoticed. */
export const passwordResetNotice = defineTemplate<{ firstName: string }>('password_reset_done', {
  fr: ({ firstName }) => ({
    subject: 'Votre mot de passe a été réinitialisé',
    paragraphs: [
      `Bonjour ${firstName},`,
      'Le mot de passe de votre compte vient d’être réinitialisé, et tous vos appareils ont été déconnectés.',
      'Si vous n’êtes pas à l’origine de ce changement, réinitialisez à nouveau votre mot de passe sans attendre et contactez notre support.',
    ],
  }),
  en: ({ firstName }) => ({
    subject: 'Your password was reset',
    paragraphs: [
      `Hello ${firstName},`,
      'The password of your account has just been reset, and every device has been signed out.',
      'If you did not make this change, reset your password again right away and contact our support.',
    ],
  }),
});
