// Browser Copilot's destructive-action classifier (F40): one implementation, used in the page (the
// guard and the pre-flight check of an action's targets) and by `main.py policy-check` (in Node).
// Input: DOM facts of the target {tag, role, type, name, value, form_action, form_method, context,
// url}; output: {destructive, category, reason}. Site-independent, multilingual (en ru uk de fr es it
// pt pl nl tr zh ja ko), word-boundary matching for alphabetic scripts, substrings for CJK.
(() => {
  const L = (source) => source;
  const LEXICON = {
    pay: [
      L('pay( now| securely| with [\\p{L} ]+)?'), L('pay [€$£]?\\s?\\d[\\d.,]*\\s?(€|\\$|£|usd|eur|gbp)?'),
      L('(make|submit|confirm|authori[sz]e) (a |the )?payment'), L('complete (the )?(purchase|payment)'), L('confirm (and )?pay(ment)?'),
      L('purchase( now)?'), L('buy( it)?( now)?'), L('buy for [€$£]?\\s?\\d[\\d.,]*'), L('checkout and pay'),
      L('оплат\\p{L}*'), L('заплатить'), L('купить( сейчас)?'),
      L('сплатити'), L('оплатити'), L('купити'),
      L('(jetzt )?bezahlen'), L('(jetzt )?kaufen'), L('zahlungspflichtig( bestellen)?'), L('kaufen und zahlen'),
      L('payer( maintenant)?'), L('acheter( maintenant)?'), L('procéder au paiement'),
      L('pagar( ahora)?'), L('comprar( ahora| ya)?'),
      L('paga( ora)?'), L('pagare'), L('acquista( ora)?'), L('compra( ora| subito)?'),
      L('finalizar (a )?compra'), L('comprar agora'),
      L('zapłać'), L('płacę'), L('kup( teraz)?'), L('kupuję'),
      L('(nu )?betalen'), L('(nu )?kopen'), L('afrekenen'),
      L('öde(me yap)?'), L('satın al'), L('hemen al'),
      L('支付'), L('付款'), L('立即购买'), L('购买'),
      L('支払う'), L('購入する'), L('今すぐ購入'), L('購入'),
      L('결제(하기)?'), L('구매(하기)?'), L('바로 구매'),
    ],
    order: [
      L('place (my |your |the )?order'), L('order now'), L('confirm (my |your |the )?order'),
      L('submit (my |your |the )?order'), L('complete (my |your |the )?order'), L('finish order'),
      L('оформить заказ'), L('заказать'), L('подтвердить заказ'),
      L('оформити замовлення'), L('замовити'), L('підтвердити замовлення'),
      L('(jetzt )?bestellen'), L('bestellung (absenden|abschließen|bestätigen)'),
      L('commander'), L('passer (la |ma )?commande'), L('valider (la |ma )?commande'), L('confirmer (la |ma )?commande'),
      L('(realizar|hacer|confirmar|tramitar) (el |mi )?pedido'), L('pedir ahora'),
      L('(effettua|conferma|invia) (l\'|l’)?ordine'), L('ordina( ora)?'),
      L('(fazer|finalizar|confirmar) (o |meu )?pedido'), L('encomendar'),
      L('zamów( teraz)?'), L('złóż zamówienie'), L('zamawiam'), L('potwierdź zamówienie'),
      L('plaats (de |je )?bestelling'), L('bestelling (plaatsen|afronden)'),
      L('sipariş(i)? (ver|tamamla|onayla)'), L('siparişi tamamla'),
      L('提交订单'), L('下单'), L('确认订单'), L('立即下单'),
      L('注文を確定'), L('注文する'), L('注文確定'),
      L('주문(하기)?'), L('주문 확정'),
    ],
    delete: [
      L('delete( \\p{L}+)*'), L('remove( \\p{L}+)?'), L('erase'), L('destroy'), L('move to (the )?trash'),
      L('trash (it|this|message|email|conversation)'), L('wipe'), L('discard( draft| changes)?'),
      L('удал\\p{L}*'), L('стереть'), L('очистить (всё|историю)'),
      L('видал\\p{L}*'),
      L('löschen'), L('entfernen'), L('endgültig löschen'),
      L('supprimer( \\p{L}+)?'), L('effacer'),
      L('eliminar( \\p{L}+)?'), L('borrar'),
      L('elimina(re)?'), L('cancella(re)?'),
      L('excluir'), L('apagar'), L('remover'),
      L('usu(ń|n\\p{L}*)'), L('skasuj'), L('wymaż'),
      L('verwijder(en)?'), L('wissen'),
      L('sil'), L('kaldır'), L('kalıcı olarak sil'),
      L('删除'), L('移除'),
      L('削除'), L('消去'),
      L('삭제'), L('제거'),
    ],
    send: [
      L('send( message| email| mail| it| now| invitation| invite| reply)?'), L('send to [\\p{L} ]+'),
      L('отправить( сообщение| письмо)?'), L('послать'),
      L('надіслати'), L('відправити'),
      L('(ab)?senden'), L('verschicken'), L('nachricht senden'),
      L('envoyer( le message)?'),
      L('enviar( mensaje| correo)?'),
      L('invia(re)?'),
      L('wyślij'), L('wysłać'),
      L('verzenden'), L('versturen'), L('verstuur'),
      L('gönder'),
      L('发送'), L('送信'), L('보내기'), L('전송'),
    ],
    publish: [
      L('publish( now| post)?'), L('post( now| comment| reply| review| it)?'), L('tweet'), L('share publicly'),
      L('go live'), L('опубликовать'), L('публиковать'), L('опублікувати'),
      L('veröffentlichen'), L('posten'), L('publier'), L('publicar'), L('pubblica(re)?'),
      L('opublikuj'), L('publiceren'), L('plaatsen'), L('yayınla'), L('paylaş'),
      L('发布'), L('发表'), L('公開する'), L('投稿(する)?'), L('게시(하기)?'), L('발행'),
    ],
    transfer: [
      L('transfer( money| funds| now)?'), L('wire( transfer| money)?'), L('send money'), L('make (a )?transfer'),
      L('перевести( деньги)?'), L('перевод(ы)? (денег|средств)'), L('переказ(ати)?'), L('переказати'),
      L('überweisen'), L('überweisung (ausführen|senden)'), L('virement'), L('effectuer (le|un) virement'), L('transférer'),
      L('transferir'), L('hacer (una )?transferencia'), L('bonifico'), L('esegui bonifico'), L('trasferisci'),
      L('fazer transferência'), L('przelew'), L('wykonaj przelew'), L('przelej'),
      L('overmaken'), L('overboeken'), L('havale( yap)?'), L('para gönder'),
      L('转账'), L('汇款'), L('振込(む)?'), L('送金'), L('송금'), L('이체'),
    ],
    subscribe: [
      L('subscribe( now)?'), L('start (my |your )?(free )?(trial|subscription)'), L('upgrade( now| plan| to [\\p{L} ]+)?'),
      L('join (now|premium)'), L('подписаться'), L('оформить подписку'), L('підписатися'),
      L('(jetzt )?abonnieren'), L('abo abschließen'), L('s\'abonner'), L('s’abonner'), L('suscribir(se|me)?'),
      L('abbonati'), L('abbonarsi'), L('assinar( agora)?'), L('subskrybuj'), L('zasubskrybuj'), L('abonneren'),
      L('abone ol'), L('订阅'), L('定期購入'), L('購読する'), L('구독(하기)?'),
    ],
    cancel: [
      L('cancel (my |the |your )?(order|subscription|membership|account|booking|reservation|plan|payment|flight|trip)'),
      L('unsubscribe'), L('close (my |the )?account'), L('deactivate( (my )?account)?'), L('terminate( contract)?'),
      L('отменить (заказ|подписку|бронь\\p{L}*|бронирование)'), L('отписаться'), L('закрыть (счёт|счет|аккаунт)'),
      L('скасувати (замовлення|підписку|бронювання)'), L('відписатися'),
      L('kündigen'), L('(abo|abonnement|bestellung|buchung) (kündigen|stornieren)'), L('stornieren'),
      L('résilier'), L('annuler (la |ma |mon |l\'|l’)?(commande|abonnement|réservation)'), L('se désabonner'),
      L('cancelar (el |la |mi )?(pedido|suscripción|reserva|cuenta)'), L('darse de baja'), L('darme de baja'),
      L('annulla (l\'|l’)?(ordine|abbonamento|prenotazione)'), L('disdici'),
      L('cancelar (o |a |minha |meu )?(pedido|assinatura|reserva|conta)'),
      L('anuluj (zamówienie|subskrypcję|rezerwację)'), L('zrezygnuj( z subskrypcji)?'),
      L('opzeggen'), L('annuleer (bestelling|abonnement|boeking)'),
      L('(siparişi|aboneliği|rezervasyonu) iptal et'), L('üyeliği iptal et'),
      L('取消订单'), L('取消订阅'), L('退订'), L('解約'), L('注文をキャンセル'), L('退会'),
      L('구독 취소'), L('주문 취소'), L('해지'),
    ],
    accept: [
      L('(i )?(accept|agree)( to)? (the |all )?(terms|conditions|agreement|contract|policy|tos|eula)( \\p{L}+)*'),
      L('i agree'), L('agree and (continue|proceed)'), L('accept and (continue|proceed)'),
      L('sign( the)? (contract|agreement|document|lease)'), L('e-?sign'), L('sign now'),
      L('(принимаю|принять) условия'), L('согласен'), L('я согласен'), L('подписать( договор)?'),
      L('погоджуюсь'), L('приймаю умови'), L('підписати( договір)?'),
      L('(ich )?stimme zu'), L('(agb|bedingungen) akzeptieren'), L('unterschreiben'), L('vertrag unterzeichnen'),
      L('j\'accepte'), L('j’accepte'), L('accepter les conditions'), L('signer( le contrat)?'),
      L('acepto( los términos)?'), L('aceptar (los )?términos'), L('firmar( contrato)?'),
      L('accetto'), L('accetta (i )?termini'), L('firma( il contratto)?'),
      L('aceito'), L('concordo'), L('aceitar (os )?termos'), L('assinar contrato'),
      L('akceptuję( regulamin)?'), L('zgadzam się'), L('podpisz( umowę)?'),
      L('ik ga akkoord'), L('akkoord gaan'), L('ondertekenen'),
      L('kabul ediyorum'), L('onaylıyorum'), L('sözleşmeyi imzala'), L('imzala'),
      L('我同意'), L('同意并继续'), L('接受条款'), L('签署'),
      L('同意する'), L('同意します'), L('署名する'),
      L('동의합니다'), L('약관 동의'), L('서명(하기)?'),
    ],
    submit: [
      L('submit (my |your |the )?(application|request|claim|booking|reservation|appeal|complaint|form|report|vote)'),
      L('apply( now)?'), L('book( now| it| this| flight| room)?'), L('confirm (the |my )?(booking|reservation)'),
      L('complete (the |my )?(booking|reservation)'), L('reserve( now| a table)?'), L('cast (my )?vote'),
      L('подать заявку'), L('отправить заявку'), L('забронировать'), L('подтвердить бронирование'),
      L('подати заявку'), L('забронювати'),
      L('(jetzt )?buchen'), L('bewerben'), L('antrag (absenden|stellen)'), L('reservieren'),
      L('réserver'), L('postuler'), L('soumettre (la |ma )?(candidature|demande)'), L('confirmer la réservation'),
      L('reservar( ahora)?'), L('solicitar'), L('postular(se)?'), L('enviar solicitud'),
      L('prenota(re| ora)?'), L('candidati'), L('invia candidatura'),
      L('candidatar-se'), L('submeter( candidatura)?'), L('confirmar reserva'),
      L('zarezerwuj'), L('aplikuj'), L('złóż wniosek'),
      L('boeken'), L('reserveren'), L('solliciteren'), L('aanvragen'),
      L('rezervasyon yap'), L('başvur'), L('başvuruyu gönder'),
      L('预订'), L('提交申请'), L('立即预订'), L('报名'),
      L('予約(する)?'), L('応募(する)?'), L('申し込む'), L('申込'),
      L('예약(하기)?'), L('신청(하기)?'), L('지원하기'),
    ],
  };
  const SAFE = [
    'add to (cart|basket|bag|wishlist|list)', 'add item', '(proceed|continue|go) to (checkout|cart|basket|payment details)',
    '(view|show|open) (cart|basket|bag)', 'checkout', 'continue shopping', 'search', 'find', 'filter', 'sort( by)?',
    'next', 'previous', 'back', 'details', 'more( info)?', 'learn more', 'read more', 'show( more)?', 'open', 'expand',
    'close', 'dismiss', 'cancel', 'no,? thanks', 'not now', 'skip', 'log ?in', 'sign ?in', 'sign ?up', 'register',
    'remove filters?', 'clear (filters|search)', 'apply filters?', 'apply (coupon|code|promo( code)?|discount)', 'reply', 'forward', 'edit', 'preview', 'save draft', 'print',
    'в корзину', 'добавить в корзину', 'к оформлению', 'оформление заказа', 'отмена', 'закрыть', 'поиск', 'найти',
    'далее', 'назад', 'подробнее', 'войти', 'у кошик', 'додати в кошик', 'скасувати', 'пошук', 'далі',
    'in den warenkorb', 'zur kasse', 'abbrechen', 'schließen', 'suchen', 'weiter', 'zurück',
    'ajouter au panier', 'annuler', 'fermer', 'rechercher', 'suivant', 'retour',
    'añadir al (carrito|cesta)', 'agregar al carrito', 'cancelar', 'cerrar', 'buscar', 'siguiente', 'volver',
    'aggiungi al carrello', 'annulla', 'chiudi', 'cerca', 'avanti', 'indietro',
    'adicionar ao (carrinho|cesto)', 'fechar', 'pesquisar', 'próximo', 'voltar',
    'do koszyka', 'dodaj do koszyka', 'anuluj', 'zamknij', 'szukaj', 'dalej', 'wstecz',
    'in (de )?winkelwagen', 'toevoegen aan winkelwagen', 'annuleren', 'sluiten', 'zoeken', 'volgende', 'terug',
    'sepete ekle', 'iptal', 'kapat', 'ara', 'ileri', 'geri',
    '加入购物车', '取消', '关闭', '搜索', '下一步', '返回',
    'カートに入れる', 'キャンセル', '閉じる', '検索', '次へ', '戻る',
    '장바구니( 담기)?', '취소', '닫기', '검색', '다음', '이전',
  ];
  const AFFIRM = [
    'ok', 'okay', 'yes', 'yes,? (i\'m|i am) sure', 'confirm', 'continue', 'proceed', 'i\'m sure', 'do it', 'go ahead', 'apply changes',
    'да', 'ок', 'подтвердить', 'продолжить', 'так', 'підтвердити', 'продовжити',
    'ja', 'bestätigen', 'fortfahren', 'oui', 'confirmer', 'continuer', 'sí', 'si', 'confirmar', 'continuar',
    'sì', 'conferma', 'continua', 'sim', 'tak', 'potwierdź', 'kontynuuj', 'bevestigen', 'doorgaan',
    'evet', 'onayla', 'tamam', 'devam', '确定', '是', '确认', '继续', 'はい', '確認', '続行', '예', '확인', '계속',
  ];
  const CJK = /[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]/;
  const compile = (phrase) => CJK.test(phrase)
    ? new RegExp(phrase, 'iu')
    : new RegExp(`(?<![\\p{L}\\p{N}])(?:${phrase})(?![\\p{L}\\p{N}])`, 'iu');
  const PATTERNS = Object.entries(LEXICON).flatMap(([category, list]) => list.map((p) => [category, compile(p)]));
  const whole = (list) => new RegExp(`^(?:${list.join('|')})[.!…]*$`, 'iu');
  const SAFE_RX = whole(SAFE);
  const AFFIRM_RX = whole(AFFIRM);
  const GENERIC_SUBMIT = whole(['submit', 'send', 'confirm', 'отправить', 'подтвердить', 'надіслати', 'senden',
    'absenden', 'envoyer', 'enviar', 'invia', 'wyślij', 'verzenden', 'gönder', '提交', '送信', '제출']);
  const ICON = [
    ['delete', /\b(trash|bin|delete|remove|garbage)\b/i], ['send', /\b(send|paper-?plane)\b/i],
    ['pay', /\b(credit-?card|payment)\b/i],
  ];
  const norm = (s) => String(s || '').replace(/\s+/g, ' ').trim().toLowerCase();
  // The longest phrase wins: "cancel subscription" over "subscription", "zahlungspflichtig bestellen" over
  // "bestellen", "取消订阅" over "订阅".
  const match = (text) => {
    let best = null;
    for (const [category, rx] of PATTERNS) {
      const m = rx.exec(text);
      if (m && (!best || m[0].length > best[1].length)) best = [category, m[0]];
    }
    return best;
  };
  const SAFE_RESULT = (reason) => ({ destructive: false, category: 'safe', reason });

  return (facts) => {
    const name = norm(facts.name) || norm(facts.value);
    const context = norm(facts.context);
    const method = norm(facts.form_method);
    const type = norm(facts.type);
    const role = norm(facts.role);
    const tag = norm(facts.tag);
    const submits = type === 'submit' || (tag === 'button' && !type && !!facts.form_action) || tag === 'form';
    if (['checkbox', 'radio', 'textbox', 'searchbox', 'combobox', 'option', 'tab', 'slider', 'spinbutton'].includes(role)
        || ['text', 'email', 'search', 'password', 'tel', 'number', 'url'].includes(type)) {
      const hit = match(name);
      if (hit && hit[0] === 'accept' && (role === 'checkbox' || type === 'checkbox')) {
        return { destructive: true, category: 'accept', reason: `ticking "${hit[1]}" accepts terms` };
      }
      return SAFE_RESULT(`a ${role || type || 'field'} is not an action`);
    }
    if (!name) {
      for (const [category, rx] of ICON) {
        if (rx.test(context)) return { destructive: true, category, reason: `icon-only control (${category} icon)` };
      }
      return SAFE_RESULT('no name and no telling icon');
    }
    if (AFFIRM_RX.test(name)) {
      const hit = match(context);
      if (hit) return { destructive: true, category: hit[0], reason: `"${name}" confirms "${hit[1]}" (${context.slice(0, 80)})` };
      return SAFE_RESULT(`"${name}" confirms nothing destructive`);
    }
    if (SAFE_RX.test(name)) return SAFE_RESULT(`"${name}" is an ordinary step`);
    const hit = match(name);
    if (hit) {
      if (submits && method === 'get' && hit[0] === 'submit') return SAFE_RESULT('a GET form only asks for a page');
      return { destructive: true, category: hit[0], reason: `"${hit[1]}"` };
    }
    if (submits && GENERIC_SUBMIT.test(name)) {
      if (method === 'get') return SAFE_RESULT('a GET form only asks for a page');
      const inContext = match(context);
      if (inContext) return { destructive: true, category: inContext[0], reason: `"${name}" submits "${inContext[1]}"` };
      return { destructive: true, category: 'submit', reason: `"${name}" submits a form (${method || 'post'})` };
    }
    return SAFE_RESULT('no destructive wording');
  };
})()
