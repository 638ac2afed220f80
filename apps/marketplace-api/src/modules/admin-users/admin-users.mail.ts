import type { UserStatus } from '../../db/schema/index.js';
import { defineTemplate } from '../../integrations/mail/templates.js';

/** Sent when an administrator creates an account without a password: the link lets its owner choose one. */
export const accountInvitation = defineTemplate<{ firstName: string; url: string; validDays: number }>('account_invitation', {
  fr: ({ firstName, url, validDays }) => ({
    subject: 'Un compte a été créé pour vous',
    paragraphs: [
      `Bonjour ${firstName},`,
      "L'équipe de la plateforme a créé un compte à votre nom avec cette adresse e-mail.",
      `Pour l'activer, choisissez votre mot de passe. Ce lien est valable ${validDays} jours et ne peut servir qu'une fois.`,
      "Si vous ne vous attendiez pas à ce message, ignorez-le : aucun mot de passe ne sera défini.",
    ],
    action: { label: 'Choisir mon mot de passe', url },
  }),
  en: ({ firstName, url, validDays }) => ({
    subject: 'An account was created for you',
    paragraphs: [
      `Hello ${firstName},`,
      "The platform's team created an account in your name with this e-mail address.",
      `To activate it, choose your password. This link is valid for ${validDays} days and works once.`,
      'If you did not expect this message, ignore it: no password will be set.',
    ],
    action: { label: 'Choose my password', url },
  }),
});

const STATUS_FR: Record<UserStatus, { subject: string; body: string }> = {
  active: { subject: 'Votre compte est de nouveau actif', body: 'Votre compte a été réactivé : vous pouvez à nouveau vous connecter.' },
  suspended: {
    subject: 'Votre compte a été suspendu',
    body: "Votre compte a été suspendu par l'équipe de la plateforme. Vous ne pouvez plus vous connecter tant que la suspension dure.",
  },
  banned: {
    subject: 'Votre compte a été banni',
    body: "Votre compte a été banni par l'équipe de la plateforme. Vous ne pouvez plus vous connecter.",
  },
};

const STATUS_EN: Record<UserStatus, { subject: string; body: string }> = {
  active: { subject: 'Your account is active again', body: 'Your account has been reactivated: you can sign in again.' },
  suspended: {
    subject: 'Your account has been suspended',
    body: "Your account has been suspended by the platform's team. You cannot sign in while the suspension lasts.",
  },
  banned: { subject: 'Your account has been banned', body: "Your account has been banned by the platform's team. You can no longer sign in." },
};

export const accountStatusChanged = defineTemplate<{ firstName: string; status: UserStatus; reason: string | null }>(
  'account_status_changed',
  {
    fr: ({ firstName, status, reason }) => ({
      subject: STATUS_FR[status].subject,
      paragraphs: [
        `Bonjour ${firstName},`,
        STATUS_FR[status].body,
        ...(reason ? [`Motif : ${reason}`] : []),
        'Pour toute question, répondez à ce message ou contactez le support.',
      ],
    }),
    en: ({ firstName, status, reason }) => ({
      subject: STATUS_EN[status].subject,
      paragraphs: [
        `Hello ${firstName},`,
        STATUS_EN[status].body,
        ...(reason ? [`Reason: ${reason}`] : []),
        'For any question, reply to this message or contact support.',
      ],
    }),
  },
);

/** A warning written by an administrator, in the frame of the recipient's language. */
export const accountWarning = defineTemplate<{ firstName: string; subject: string; message: string }>('account_warning', {
  fr: ({ firstName, subject, message }) => ({
    subject: `Avertissement : ${subject}`,
    paragraphs: [
      `Bonjour ${firstName},`,
      "L'équipe de modération de la plateforme vous adresse l'avertissement suivant :",
      message,
      "Sans changement de votre part, votre compte pourra être suspendu. Ce message figure aussi dans vos notifications.",
    ],
  }),
  en: ({ firstName, subject, message }) => ({
    subject: `Warning: ${subject}`,
    paragraphs: [
      `Hello ${firstName},`,
      "The platform's moderation team sends you the following warning:",
      message,
      'Without a change on your side, your account may be suspended. This message is also in your notifications.',
    ],
  }),
});
