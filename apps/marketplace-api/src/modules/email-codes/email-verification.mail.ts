import { defineTemplate } from '../../integrations/mail/templates.js';

export const verifyEmailLink = defineTemplate<{ firstName: string; url: string }>('verify_email_link', {
  fr: ({ firstName, url }) => ({
    subject: 'Confirmez votre adresse e-mail',
    paragraphs: [
      `Bonjour ${firstName},`,
      'Pour activer toutes les fonctions de votre compte, confirmez votre adresse e-mail. Ce lien est valable 24 heures.',
      "Si vous n'êtes pas à l'origine de cette inscription, ignorez ce message.",
    ],
    action: { label: 'Confirmer mon adresse', url },
  }),
  en: ({ firstName, url }) => ({
    subject: 'Confirm your e-mail address',
    paragraphs: [
      `Hello ${firstName},`,
      'To unlock every feature of your account, confirm your e-mail address. This link is valid for 24 hours.',
      "If you did not sign up, ignore this message.",
    ],
    action: { label: 'Confirm my address', url },
  }),
});

export const verifyEmailOtp = defineTemplate<{ firstName: string; code: string }>('verify_email_otp', {
  fr: ({ firstName, code }) => ({
    subject: 'Votre code de vérification',
    paragraphs: [
      `Bonjour ${firstName},`,
      `Votre code de vérification : ${code}`,
      'Saisissez-le dans l’application pour confirmer votre adresse e-mail. Il est valable 10 minutes et ne peut servir qu’une fois.',
      "Si vous n'avez pas demandé ce code, ignorez ce message.",
    ],
  }),
  en: ({ firstName, code }) => ({
    subject: 'Your verification code',
    paragraphs: [
      `Hello ${firstName},`,
      `Your verification code: ${code}`,
      'Enter it in the app to confirm your e-mail address. It is valid for 10 minutes and works once.',
      'If you did not ask for this code, ignore this message.',
    ],
  }),
});
