import { defineTemplate } from '../../integrations/mail/templates.js';

export const prestataireSuspendedMail = defineTemplate<{ firstName: string; businessName: string; reason: string }>(
  'prestataire_suspended',
  {
    fr: ({ firstName, businessName, reason }) => ({
      subject: 'Votre compte prestataire est suspendu',
      paragraphs: [
        `Bonjour ${firstName},`,
        `Le compte prestataire de ${businessName} est suspendu : votre profil n’apparaît plus dans les recherches et vous ne recevez plus de nouvelles demandes et ne pouvez plus envoyer de devis.`,
        `Motif : ${reason}`,
        'Mettez vos documents à jour depuis votre espace prestataire ; notre équipe réactivera votre compte après vérification.',
      ],
    }),
    en: ({ firstName, businessName, reason }) => ({
      subject: 'Your provider account is suspended',
      paragraphs: [
        `Hello ${firstName},`,
        `The provider account of ${businessName} is suspended: your profile no longer appears in searches and you can no longer receive requests or send quotes.`,
        `Reason: ${reason}`,
        'Update your documents from your provider area; our team will reactivate your account once they are checked.',
      ],
    }),
  },
);
