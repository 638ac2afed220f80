import type { DocumentType, Lang } from '../../db/schema/index.js';
import { defineTemplate } from '../../integrations/mail/templates.js';

/** The documents as a French prestataire knows them. */
export const DOCUMENT_TYPE_NAMES: Record<Lang, Record<DocumentType, string>> = {
  fr: {
    business_registration: "Justificatif d'immatriculation (extrait Kbis ou avis de situation SIRENE)",
    insurance: "Attestation d'assurance responsabilité civile professionnelle",
    identity: "Pièce d'identité du dirigeant",
    other: 'Autre document',
  },
  en: {
    business_registration: 'Business registration (Kbis extract or SIRENE registration notice)',
    insurance: 'Professional liability insurance certificate',
    identity: "Business owner's identity document",
    other: 'Other document',
  },
};

interface Named {
  firstName: string;
  businessName: string;
}

export const prestataireValidatedMail = defineTemplate<Named & { note: string | null }>('prestataire_validated', {
  fr: ({ firstName, businessName, note }) => ({
    subject: 'Votre compte prestataire est validé',
    paragraphs: [
      `Bonjour ${firstName},`,
      `Bonne nouvelle : ${businessName} est validé. Votre profil apparaît désormais dans les recherches des clients, et vous pouvez recevoir des demandes et envoyer des devis.`,
      ...(note ? [`Message de notre équipe : ${note}`] : []),
      'Pensez à tenir vos documents à jour, notamment votre attestation d’assurance.',
    ],
  }),
  en: ({ firstName, businessName, note }) => ({
    subject: 'Your provider account is approved',
    paragraphs: [
      `Hello ${firstName},`,
      `Good news: ${businessName} is approved. Your profile now appears in client searches, and you can receive requests and send quotes.`,
      ...(note ? [`A note from our team: ${note}`] : []),
      'Remember to keep your documents up to date, your insurance certificate in particular.',
    ],
  }),
});

export const prestataireRejectedMail = defineTemplate<Named & { reason: string }>('prestataire_rejected', {
  fr: ({ firstName, businessName, reason }) => ({
    subject: 'Votre demande de compte prestataire a été refusée',
    paragraphs: [
      `Bonjour ${firstName},`,
      `Après examen, nous ne pouvons pas valider le compte prestataire de ${businessName}.`,
      `Motif : ${reason}`,
      'Si vous pensez qu’il s’agit d’une erreur, répondez à ce message ou contactez notre support.',
    ],
  }),
  en: ({ firstName, businessName, reason }) => ({
    subject: 'Your provider application was declined',
    paragraphs: [
      `Hello ${firstName},`,
      `After review, we cannot approve the provider account of ${businessName}.`,
      `Reason: ${reason}`,
      'If you think this is a mistake, reply to this message or contact our support.',
    ],
  }),
});

export const prestataireDocumentsRequestedMail = defineTemplate<Named & { documentTypes: DocumentType[]; message: string | null }>(
  'prestataire_documents_requested',
  {
    fr: ({ firstName, businessName, documentTypes, message }) => ({
      subject: 'Documents requis pour valider votre compte prestataire',
      paragraphs: [
        `Bonjour ${firstName},`,
        `Pour poursuivre la validation de ${businessName}, merci de nous transmettre les documents suivants depuis votre espace prestataire :`,
        documentTypes.map((type) => `- ${DOCUMENT_TYPE_NAMES.fr[type]}`).join('\n'),
        ...(message ? [`Message de notre équipe : ${message}`] : []),
        'Dès réception, votre dossier reviendra dans la file de validation.',
      ],
    }),
    en: ({ firstName, businessName, documentTypes, message }) => ({
      subject: 'Documents needed to approve your provider account',
      paragraphs: [
        `Hello ${firstName},`,
        `To continue the review of ${businessName}, please upload the following documents from your provider area:`,
        documentTypes.map((type) => `- ${DOCUMENT_TYPE_NAMES.en[type]}`).join('\n'),
        ...(message ? [`A note from our team: ${message}`] : []),
        'As soon as they arrive, your application goes back into the review queue.',
      ],
    }),
  },
);

export const prestataireReinstatedMail = defineTemplate<Named & { note: string | null }>('prestataire_reinstated', {
  fr: ({ firstName, businessName, note }) => ({
    subject: 'Votre compte prestataire est réactivé',
    paragraphs: [
      `Bonjour ${firstName},`,
      `La suspension de ${businessName} est levée. Votre profil apparaît de nouveau dans les recherches et vous pouvez recevoir des demandes.`,
      ...(note ? [`Message de notre équipe : ${note}`] : []),
    ],
  }),
  en: ({ firstName, businessName, note }) => ({
    subject: 'Your provider account is active again',
    paragraphs: [
      `Hello ${firstName},`,
      `The suspension of ${businessName} is lifted. Your profile appears in searches again and you can receive requests.`,
      ...(note ? [`A note from our team: ${note}`] : []),
    ],
  }),
});
