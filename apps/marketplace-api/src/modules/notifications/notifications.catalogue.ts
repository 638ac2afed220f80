import type { Lang } from '../../db/schema/index.js';

/** Who an event concerns: a party of its subject, both (less whoever made the move), the user it is about, or the named recipient. */
export type Audience = 'client' | 'prestataire' | 'parties' | 'subject_user' | 'recipient';

type Text = { title: string; body: string };
type Render = (payload: Record<string, unknown>) => Text;

export interface CatalogueEntry {
  to: Audience;
  text: Record<Lang, Render>;
}

function money(lang: Lang, cents: unknown): string {
  if (typeof cents !== 'number') return '';
  return new Intl.NumberFormat(lang === 'fr' ? 'fr-FR' : 'en-GB', { style: 'currency', currency: 'EUR' }).format(cents / 100);
}

/** An excerpt of a message for the notification's body. */
function excerpt(value: unknown): string {
  const text = typeof value === 'string' ? value.replace(/\s+/g, ' ').trim() : '';
  return text.length > 140 ? `${text.slice(0, 139)}…` : text;
}

const fixed = (title: string, body: string): Render => () => ({ title, body });

/**
 * The notifications the marketplace's domain events make, keyed by event type, in each language a
 * user may choose (fr, en). An event type missing here makes no notification.
 */
export const NOTIFICATION_CATALOGUE: Record<string, CatalogueEntry> = {
  'service_request.created': {
    to: 'prestataire',
    text: {
      fr: fixed('Nouvelle demande', 'Un client vous adresse une demande de prestation.'),
      en: fixed('New request', 'A client sent you a service request.'),
    },
  },
  'service_request.accepted': {
    to: 'client',
    text: {
      fr: fixed('Demande acceptée', 'Le prestataire a accepté votre demande : le rendez-vous est réservé.'),
      en: fixed('Request accepted', 'The provider accepted your request: the appointment is booked.'),
    },
  },
  'service_request.refused': {
    to: 'client',
    text: {
      fr: fixed('Demande déclinée', 'Le prestataire ne peut pas donner suite à votre demande.'),
      en: fixed('Request declined', 'The provider cannot take on your request.'),
    },
  },
  'service_request.cancelled': {
    to: 'prestataire',
    text: {
      fr: fixed('Demande annulée', 'Le client a annulé sa demande.'),
      en: fixed('Request cancelled', 'The client cancelled the request.'),
    },
  },
  'service_request.expired': {
    to: 'client',
    text: {
      fr: fixed('Demande expirée', "Votre demande a expiré sans qu'une offre soit acceptée."),
      en: fixed('Request expired', 'Your request expired without an accepted offer.'),
    },
  },
  'offer.created': {
    to: 'client',
    text: {
      fr: (p) => ({ title: 'Nouvelle offre', body: `Vous avez reçu une offre de ${money('fr', p.amount_cents)}.` }),
      en: (p) => ({ title: 'New offer', body: `You received an offer of ${money('en', p.amount_cents)}.` }),
    },
  },
  'offer.updated': {
    to: 'client',
    text: {
      fr: (p) => ({ title: 'Offre modifiée', body: `Une offre a été modifiée : ${money('fr', p.amount_cents)}.` }),
      en: (p) => ({ title: 'Offer changed', body: `An offer was changed: ${money('en', p.amount_cents)}.` }),
    },
  },
  'offer.accepted': {
    to: 'prestataire',
    text: {
      fr: fixed('Offre acceptée', 'Le client a accepté votre offre : le rendez-vous est réservé.'),
      en: fixed('Offer accepted', 'The client accepted your offer: the appointment is booked.'),
    },
  },
  'offer.refused': {
    to: 'prestataire',
    text: {
      fr: fixed('Offre refusée', "Votre offre n'a pas été retenue."),
      en: fixed('Offer declined', 'Your offer was not selected.'),
    },
  },
  'offer.expired': {
    to: 'prestataire',
    text: {
      fr: fixed('Offre expirée', 'Votre offre a expiré sans réponse du client.'),
      en: fixed('Offer expired', 'Your offer expired without an answer from the client.'),
    },
  },
  'offer.withdrawn': {
    to: 'client',
    text: {
      fr: fixed('Offre retirée', 'Un prestataire a retiré son offre.'),
      en: fixed('Offer withdrawn', 'A provider withdrew their offer.'),
    },
  },
  'appointment.created': {
    to: 'parties',
    text: {
      fr: fixed('Rendez-vous réservé', 'Un nouveau rendez-vous est à votre agenda.'),
      en: fixed('Appointment booked', 'A new appointment is in your calendar.'),
    },
  },
  'appointment.rescheduled': {
    to: 'parties',
    text: {
      fr: fixed('Rendez-vous déplacé', 'Votre rendez-vous a changé de date.'),
      en: fixed('Appointment moved', 'Your appointment was rescheduled.'),
    },
  },
  'appointment.cancelled': {
    to: 'parties',
    text: {
      fr: fixed('Rendez-vous annulé', 'Votre rendez-vous a été annulé.'),
      en: fixed('Appointment cancelled', 'Your appointment was cancelled.'),
    },
  },
  'appointment.started': {
    to: 'parties',
    text: {
      fr: fixed('Intervention commencée', "Le prestataire a commencé l'intervention."),
      en: fixed('Work started', 'The provider started the work.'),
    },
  },
  'appointment.ended': {
    to: 'parties',
    text: {
      fr: (p) => ({ title: 'Intervention terminée', body: `Le travail est terminé. Montant final : ${money('fr', p.price_cents)}.` }),
      en: (p) => ({ title: 'Work finished', body: `The work is done. Final price: ${money('en', p.price_cents)}.` }),
    },
  },
  'appointment.completed': {
    to: 'parties',
    text: {
      fr: fixed('Rendez-vous clôturé', 'Le rendez-vous est terminé. Merci !'),
      en: fixed('Appointment completed', 'The appointment is complete. Thank you!'),
    },
  },
  'appointment.price_adjustment_requested': {
    to: 'parties',
    text: {
      fr: (p) => ({
        title: 'Ajustement de prix demandé',
        body: `Le prestataire propose un nouveau prix : ${money('fr', p.price_adjustment_amount_cents)}. Acceptez-le ou refusez-le.`,
      }),
      en: (p) => ({
        title: 'Price adjustment requested',
        body: `The provider proposes a new price: ${money('en', p.price_adjustment_amount_cents)}. Accept or reject it.`,
      }),
    },
  },
  'appointment.price_adjustment_accepted': {
    to: 'parties',
    text: {
      fr: fixed('Ajustement accepté', "Le client a accepté l'ajustement de prix."),
      en: fixed('Adjustment accepted', 'The client accepted the price adjustment.'),
    },
  },
  'appointment.price_adjustment_rejected': {
    to: 'parties',
    text: {
      fr: fixed('Ajustement refusé', "Le client a refusé l'ajustement de prix."),
      en: fixed('Adjustment rejected', 'The client rejected the price adjustment.'),
    },
  },
  'payment.succeeded': {
    to: 'parties',
    text: {
      fr: (p) => ({ title: 'Paiement reçu', body: `Le paiement de ${money('fr', p.amount_cents)} a réussi.` }),
      en: (p) => ({ title: 'Payment received', body: `The payment of ${money('en', p.amount_cents)} succeeded.` }),
    },
  },
  'payment.failed': {
    to: 'client',
    text: {
      fr: fixed('Paiement refusé', "Votre paiement n'a pas abouti. Vous pouvez réessayer."),
      en: fixed('Payment failed', 'Your payment did not go through. You can try again.'),
    },
  },
  'payment.refunded': {
    to: 'client',
    text: {
      fr: (p) => ({ title: 'Remboursement', body: `Vous avez été remboursé de ${money('fr', p.refunded_cents ?? p.amount_cents)}.` }),
      en: (p) => ({ title: 'Refund', body: `You were refunded ${money('en', p.refunded_cents ?? p.amount_cents)}.` }),
    },
  },
  'payment.partially_refunded': {
    to: 'client',
    text: {
      fr: (p) => ({
        title: 'Remboursement partiel',
        body: `Vous avez été remboursé de ${money('fr', p.refund_cents)} (${money('fr', p.refunded_cents)} remboursés sur ${money('fr', p.amount_cents)}).`,
      }),
      en: (p) => ({
        title: 'Partial refund',
        body: `You were refunded ${money('en', p.refund_cents)} (${money('en', p.refunded_cents)} of ${money('en', p.amount_cents)} refunded so far).`,
      }),
    },
  },
  'prestataire.validated': {
    to: 'subject_user',
    text: {
      fr: fixed('Compte validé', 'Votre compte prestataire est validé : vous apparaissez dans les recherches.'),
      en: fixed('Account approved', 'Your provider account is approved: you now appear in search.'),
    },
  },
  'prestataire.reinstated': {
    to: 'subject_user',
    text: {
      fr: fixed('Compte rétabli', 'Votre compte prestataire est de nouveau actif.'),
      en: fixed('Account reinstated', 'Your provider account is active again.'),
    },
  },
  'prestataire.rejected': {
    to: 'subject_user',
    text: {
      fr: fixed('Compte refusé', "Votre demande d'inscription comme prestataire a été refusée."),
      en: fixed('Account rejected', 'Your provider application was rejected.'),
    },
  },
  'prestataire.documents_requested': {
    to: 'subject_user',
    text: {
      fr: fixed('Documents demandés', 'Des documents complémentaires sont nécessaires pour valider votre compte.'),
      en: fixed('Documents requested', 'More documents are needed to approve your account.'),
    },
  },
  'prestataire.suspended': {
    to: 'subject_user',
    text: {
      fr: fixed('Compte suspendu', 'Votre compte prestataire est suspendu.'),
      en: fixed('Account suspended', 'Your provider account is suspended.'),
    },
  },
  'review.approved': {
    to: 'prestataire',
    text: {
      fr: (p) => ({ title: 'Nouvel avis publié', body: `Un avis de ${p.rating}/5 sur votre prestation est en ligne.` }),
      en: (p) => ({ title: 'New review published', body: `A ${p.rating}/5 review of your service is now online.` }),
    },
  },
  'message.created': {
    to: 'recipient',
    text: {
      fr: (p) => ({ title: 'Nouveau message', body: excerpt(p.body) }),
      en: (p) => ({ title: 'New message', body: excerpt(p.body) }),
    },
  },
  'conversation.dispute_reported': {
    to: 'parties',
    text: {
      fr: fixed('Litige signalé', "Un litige a été signalé sur votre conversation ; l'équipe l'examine."),
      en: fixed('Dispute reported', 'A dispute was reported on your conversation; our team is looking into it.'),
    },
  },
  'conversation.dispute_resolved': {
    to: 'parties',
    text: {
      fr: (p) => ({
        title: 'Litige résolu',
        body: typeof p.refund_cents === 'number' && p.refund_cents > 0 ? `Le litige est résolu, avec un remboursement de ${money('fr', p.refund_cents)}.` : 'Le litige est résolu.',
      }),
      en: (p) => ({
        title: 'Dispute resolved',
        body: typeof p.refund_cents === 'number' && p.refund_cents > 0 ? `The dispute is resolved, with a refund of ${money('en', p.refund_cents)}.` : 'The dispute is resolved.',
      }),
    },
  },
};
