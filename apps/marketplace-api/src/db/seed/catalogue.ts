/**
 * The automotive-services catalogue offered in France: what clients ask for and prestataires
 * offer. Durations are typical workshop times; prices are indicative, labour and common parts
 * included (what a mid-range garage asks for a compact car), in euro cents. Prestataires set
 * their own price and duration per service.
 */
export interface CatalogueService {
  slug: string;
  name: string;
  description: string;
  durationMinutes: number;
  priceCents: number;
}

export interface CatalogueCategory {
  slug: string;
  name: string;
  description: string;
  icon: string;
  services: CatalogueService[];
}

export const CATALOGUE: CatalogueCategory[] = [
  {
    slug: 'entretien',
    name: 'Entretien et révision',
    description: 'Vidange, filtres, révision selon le carnet du constructeur et petites pièces d’usure.',
    icon: 'oil-can',
    services: [
      {
        slug: 'vidange-filtre-huile',
        name: 'Vidange et filtre à huile',
        description: 'Vidange de l’huile moteur, remplacement du filtre à huile et contrôle des niveaux.',
        durationMinutes: 45,
        priceCents: 8900,
      },
      {
        slug: 'revision-constructeur',
        name: 'Révision constructeur',
        description:
          'Révision complète selon le plan d’entretien du constructeur, avec tampon du carnet : vidange, filtres, points de contrôle et remise à zéro de l’indicateur.',
        durationMinutes: 120,
        priceCents: 18900,
      },
      {
        slug: 'filtre-air',
        name: 'Remplacement du filtre à air',
        description: 'Remplacement du filtre à air du moteur.',
        durationMinutes: 20,
        priceCents: 3500,
      },
      {
        slug: 'filtre-habitacle',
        name: 'Remplacement du filtre d’habitacle',
        description: 'Remplacement du filtre à pollen (charbon actif sur demande).',
        durationMinutes: 20,
        priceCents: 3900,
      },
      {
        slug: 'bougies-allumage',
        name: 'Remplacement des bougies d’allumage',
        description: 'Remplacement du jeu de bougies d’un moteur essence.',
        durationMinutes: 45,
        priceCents: 8900,
      },
      {
        slug: 'balais-essuie-glace',
        name: 'Remplacement des balais d’essuie-glace',
        description: 'Remplacement des balais avant (et arrière si besoin).',
        durationMinutes: 15,
        priceCents: 2900,
      },
    ],
  },
  {
    slug: 'freinage',
    name: 'Freinage',
    description: 'Plaquettes, disques, tambours et liquide de frein.',
    icon: 'brake-disc',
    services: [
      {
        slug: 'plaquettes-avant',
        name: 'Plaquettes de frein avant',
        description: 'Remplacement des plaquettes de frein de l’essieu avant et contrôle des disques.',
        durationMinutes: 60,
        priceCents: 12900,
      },
      {
        slug: 'disques-plaquettes-avant',
        name: 'Disques et plaquettes avant',
        description: 'Remplacement des disques et des plaquettes de frein de l’essieu avant.',
        durationMinutes: 90,
        priceCents: 26900,
      },
      {
        slug: 'plaquettes-arriere',
        name: 'Plaquettes de frein arrière',
        description: 'Remplacement des plaquettes de frein de l’essieu arrière.',
        durationMinutes: 60,
        priceCents: 11900,
      },
      {
        slug: 'kit-freins-tambour',
        name: 'Kit de freins à tambour arrière',
        description: 'Remplacement des mâchoires, tambours et cylindres de roue de l’essieu arrière.',
        durationMinutes: 120,
        priceCents: 24900,
      },
      {
        slug: 'liquide-frein',
        name: 'Remplacement du liquide de frein',
        description: 'Purge complète du circuit et remplacement du liquide de frein (tous les deux ans).',
        durationMinutes: 45,
        priceCents: 6900,
      },
    ],
  },
  {
    slug: 'pneus',
    name: 'Pneus, géométrie et suspension',
    description: 'Montage, équilibrage, parallélisme, crevaisons et amortisseurs.',
    icon: 'tire',
    services: [
      {
        slug: 'montage-equilibrage-pneus',
        name: 'Montage et équilibrage de 4 pneus',
        description: 'Démontage, montage, valves neuves et équilibrage de quatre pneus, hors fourniture des pneus.',
        durationMinutes: 60,
        priceCents: 6000,
      },
      {
        slug: 'changement-pneus-saison',
        name: 'Changement pneus été / hiver',
        description: 'Permutation des roues été et hiver, contrôle de la pression et du serrage.',
        durationMinutes: 45,
        priceCents: 4900,
      },
      {
        slug: 'reparation-crevaison',
        name: 'Réparation de crevaison',
        description: 'Réparation d’un pneu crevé par mèche ou champignon quand la zone le permet.',
        durationMinutes: 30,
        priceCents: 2500,
      },
      {
        slug: 'geometrie-parallelisme',
        name: 'Géométrie et parallélisme',
        description: 'Contrôle et réglage du parallélisme des trains avant et arrière sur banc.',
        durationMinutes: 60,
        priceCents: 8900,
      },
      {
        slug: 'amortisseurs-avant',
        name: 'Amortisseurs avant',
        description: 'Remplacement de la paire d’amortisseurs avant avec coupelles et butées.',
        durationMinutes: 150,
        priceCents: 34900,
      },
    ],
  },
  {
    slug: 'moteur',
    name: 'Moteur, embrayage et échappement',
    description: 'Distribution, courroies, embrayage, échappement et dépollution.',
    icon: 'engine',
    services: [
      {
        slug: 'kit-distribution',
        name: 'Kit de distribution et pompe à eau',
        description: 'Remplacement de la courroie de distribution, des galets et de la pompe à eau, avec liquide de refroidissement.',
        durationMinutes: 240,
        priceCents: 59900,
      },
      {
        slug: 'courroie-accessoires',
        name: 'Courroie d’accessoires',
        description: 'Remplacement de la courroie d’accessoires et de son galet tendeur.',
        durationMinutes: 60,
        priceCents: 13900,
      },
      {
        slug: 'kit-embrayage',
        name: 'Kit d’embrayage',
        description: 'Remplacement du disque, du mécanisme et de la butée d’embrayage.',
        durationMinutes: 300,
        priceCents: 79900,
      },
      {
        slug: 'echappement',
        name: 'Réparation de l’échappement',
        description: 'Remplacement du silencieux ou d’un élément de la ligne d’échappement.',
        durationMinutes: 60,
        priceCents: 19900,
      },
      {
        slug: 'nettoyage-fap',
        name: 'Nettoyage du filtre à particules',
        description: 'Régénération et nettoyage du filtre à particules d’un moteur diesel, avec contrôle des capteurs.',
        durationMinutes: 120,
        priceCents: 24900,
      },
    ],
  },
  {
    slug: 'electricite-diagnostic',
    name: 'Électricité et diagnostic',
    description: 'Diagnostic électronique, batterie, démarrage, charge et éclairage.',
    icon: 'battery',
    services: [
      {
        slug: 'diagnostic-electronique',
        name: 'Diagnostic électronique',
        description: 'Lecture des codes défaut à la valise, interprétation et devis de réparation.',
        durationMinutes: 45,
        priceCents: 5900,
      },
      {
        slug: 'remplacement-batterie',
        name: 'Remplacement de la batterie',
        description: 'Test du circuit de charge, fourniture et pose d’une batterie, initialisation si nécessaire.',
        durationMinutes: 30,
        priceCents: 15900,
      },
      {
        slug: 'alternateur',
        name: 'Remplacement de l’alternateur',
        description: 'Dépose et pose d’un alternateur neuf ou échange standard.',
        durationMinutes: 120,
        priceCents: 39900,
      },
      {
        slug: 'demarreur',
        name: 'Remplacement du démarreur',
        description: 'Dépose et pose d’un démarreur neuf ou échange standard.',
        durationMinutes: 120,
        priceCents: 34900,
      },
      {
        slug: 'eclairage-reglage-phares',
        name: 'Ampoules et réglage des phares',
        description: 'Remplacement d’ampoules et réglage de la hauteur des feux.',
        durationMinutes: 30,
        priceCents: 2900,
      },
    ],
  },
  {
    slug: 'carrosserie',
    name: 'Carrosserie et vitrage',
    description: 'Débosselage, peinture, pare-brise et optiques.',
    icon: 'car-door',
    services: [
      {
        slug: 'debosselage-sans-peinture',
        name: 'Débosselage sans peinture',
        description: 'Redressage de petites bosses (grêle, portière) sans reprise de peinture.',
        durationMinutes: 120,
        priceCents: 15000,
      },
      {
        slug: 'peinture-element',
        name: 'Peinture d’un élément',
        description: 'Préparation et peinture d’un élément de carrosserie (aile, portière, pare-chocs).',
        durationMinutes: 480,
        priceCents: 35000,
      },
      {
        slug: 'reparation-impact-pare-brise',
        name: 'Réparation d’impact de pare-brise',
        description: 'Injection de résine dans un impact de moins de 2 cm hors champ de vision du conducteur.',
        durationMinutes: 30,
        priceCents: 8000,
      },
      {
        slug: 'remplacement-pare-brise',
        name: 'Remplacement du pare-brise',
        description: 'Fourniture et pose d’un pare-brise, recalibrage des caméras d’aide à la conduite si équipé.',
        durationMinutes: 150,
        priceCents: 45000,
      },
      {
        slug: 'renovation-optiques',
        name: 'Rénovation des optiques de phares',
        description: 'Ponçage, polissage et vernis de protection des optiques jaunies.',
        durationMinutes: 60,
        priceCents: 7900,
      },
    ],
  },
  {
    slug: 'climatisation',
    name: 'Climatisation',
    description: 'Recharge, recherche de fuite et désinfection du circuit de climatisation.',
    icon: 'snowflake',
    services: [
      {
        slug: 'recharge-climatisation',
        name: 'Recharge de climatisation',
        description: 'Récupération, tirage au vide et recharge du gaz réfrigérant avec contrôle d’étanchéité.',
        durationMinutes: 60,
        priceCents: 8900,
      },
      {
        slug: 'recherche-fuite-climatisation',
        name: 'Recherche de fuite de climatisation',
        description: 'Contrôle du circuit au traceur UV ou à l’azote et diagnostic de la panne.',
        durationMinutes: 60,
        priceCents: 6900,
      },
      {
        slug: 'desinfection-climatisation',
        name: 'Désinfection de la climatisation',
        description: 'Traitement antibactérien du circuit de ventilation et remplacement du filtre d’habitacle.',
        durationMinutes: 30,
        priceCents: 4900,
      },
    ],
  },
  {
    slug: 'controle-technique',
    name: 'Contrôle technique',
    description: 'Contrôle technique périodique, pré-contrôle et contre-visite.',
    icon: 'clipboard-check',
    services: [
      {
        slug: 'controle-technique',
        name: 'Contrôle technique',
        description: 'Contrôle technique périodique d’un véhicule léger dans un centre agréé.',
        durationMinutes: 45,
        priceCents: 7900,
      },
      {
        slug: 'contre-visite',
        name: 'Contre-visite',
        description: 'Nouveau contrôle des défaillances relevées, dans les deux mois suivant le contrôle.',
        durationMinutes: 30,
        priceCents: 2500,
      },
      {
        slug: 'pre-controle-technique',
        name: 'Pré-contrôle technique',
        description: 'Vérification des points du contrôle technique et remise en état avant le passage au centre.',
        durationMinutes: 45,
        priceCents: 3900,
      },
    ],
  },
];
