import { defineTemplate } from '../../integrations/mail/templates.js';

/** To the new address: the change is made only when this link is followed. */
export const emailChangeConfirmLink = defineTemplate<{ firstName: string; url: string }>('email_change_confirm', {
  fr: ({ firstName, url }) => ({
    subject: 'Confirmez votre nouvelle adresse e-mail',
    paragraphs: [
      `Bonjour ${firstName},`,
      'Vous avez demandé que cette adresse devienne celle de votre compte. Le changement ne sera fait qu’une fois ce lien suivi ; il est valable 24 heures et ne sert qu’une fois.',
      "Si vous n'êtes pas à l'origine de cette demande, ignorez ce message : rien ne changera.",
    ],
    action: { label: 'Confirmer cette adresse', url },
  }),
  en: ({ firstName, url }) => ({
    subject: 'Confirm your new e-mail address',
    paragraphs: [
      `Hello ${firstName},`,
      'You asked for this address to become the one of your account. The change is made only once this link is followed; it is valid for 24 hours and works once.',
      'If you did not ask for this, ignore this message: nothing will change.',
    ],
    action: { label: 'Confirm this address', url },
  }),
});

/**
 * To the current address when a change is asked for: the owner hears of it even when someone else
 * holding a session asked, and can undo it (before or after it is confirmed) with the link.
 */
export const emailChangeRequestedNotice = defineTemplate<{ firstName: string; newEmail: string; undoUrl: string | null }>(
  'email_change_requested',
  {
    fr: ({ firstName, newEmail, undoUrl }) => ({
      subject: 'Changement de l’adresse e-mail de votre compte',
      paragraphs: [
        `Bonjour ${firstName},`,
        `Un changement de l’adresse e-mail de votre compte vers ${newEmail} a été demandé. Il prendra effet quand la nouvelle adresse sera confirmée.`,
        undoUrl
          ? 'Si vous n’êtes pas à l’origine de cette demande, suivez ce lien (valable 7 jours) : il annule le changement ou rétablit cette adresse, déconnecte tous les appareils et vous demandera de choisir un nouveau mot de passe.'
          : 'Si vous n’êtes pas à l’origine de cette demande, contactez notre support sans attendre.',
      ],
      ...(undoUrl ? { action: { label: 'Ce n’est pas moi : garder cette adresse', url: undoUrl } } : {}),
    }),
    en: ({ firstName, newEmail, undoUrl }) => ({
      subject: 'Change of the e-mail address of your account',
      paragraphs: [
        `Hello ${firstName},`,
        `A change of the e-mail address of your account to ${newEmail} was asked for. It takes effect when the new address is confirmed.`,
        undoUrl
          ? 'If you did not ask for this, follow this link (valid for 7 days): it cancels the change or restores this address, signs out every device, and asks you to choose a new password.'
          : 'If you did not ask for this, contact our support right away.',
      ],
      ...(undoUrl ? { action: { label: 'It was not me: keep this address', url: undoUrl } } : {}),
    }),
  },
);

/** To the restored address: what the undo did and what to do next. */
export const emailChangeRevertedNotice = defineTemplate<{ firstName: string; resetUrl: string }>('email_change_reverted', {
  fr: ({ firstName, resetUrl }) => ({
    subject: 'Votre adresse e-mail a été rétablie',
    paragraphs: [
      `Bonjour ${firstName},`,
      'Cette adresse est de nouveau celle de votre compte. Tous les appareils ont été déconnectés et l’ancien mot de passe ne fonctionne plus.',
      'Choisissez un nouveau mot de passe pour vous reconnecter.',
    ],
    action: { label: 'Choisir un mot de passe', url: resetUrl },
  }),
  en: ({ firstName, resetUrl }) => ({
    subject: 'Your e-mail address was restored',
    paragraphs: [
      `Hello ${firstName},`,
      'This address is again the one of your account. Every device has been signed out and the former password no longer works.',
      'Choose a new password to sign in again.',
    ],
    action: { label: 'Choose a password', url: resetUrl },
  }),
});
